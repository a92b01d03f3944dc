-- PostgreSQL's begin-payment function gained the return URL; SQLite inserts it from Rust.
select 1;
