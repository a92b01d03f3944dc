//! The client address a join, and a client's sockets, are limited by. `X-Forwarded-For` is
//! believed only when the connection comes from a configured trusted proxy, and then we take
//! the right-most address that is not itself a trusted proxy (the left-most entries are
//! whatever the client wrote).
//!
//! The address is a key, not a host: one IPv6 subscriber is handed a whole /64 and could take
//! a fresh address for every request, so an IPv6 client counts as its /64; an IPv4 address
//! written in IPv6 form counts as the IPv4 address.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

pub fn client_ip(peer: SocketAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let peer_ip = peer.ip().to_canonical();
    if !is_trusted(peer_ip, trusted) {
        return key(peer_ip);
    }
    // Read from the right, as proxies append: no list of addresses is built on every join.
    // `client` is the nearest hop so far, starting with the proxy we are talking to.
    let mut client = peer_ip;
    'walk: for line in headers.get_all("x-forwarded-for").iter().rev() {
        // A hop that is not an address (or a line that is not text) ends the walk: it is the
        // client, and what stands for it is the trusted hop that passed it on. Skipping it
        // would let a client reach the entries it wrote itself and pick its own key.
        let Ok(line) = line.to_str() else { break };
        for hop in line.rsplit(',') {
            let Ok(ip) = hop.trim().parse::<IpAddr>() else {
                break 'walk;
            };
            client = ip.to_canonical();
            if !is_trusted(client, trusted) {
                break 'walk;
            }
        }
    }
    key(client)
}

/// What a client is counted as: an IPv4 address as it is, an IPv6 address as its /64.
fn key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
    }
}

fn is_trusted(ip: IpAddr, trusted: &[IpNet]) -> bool {
    trusted.iter().any(|net| net.contains(&ip))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(xff: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", HeaderValue::from_str(xff).unwrap());
        h
    }

    #[test]
    fn untrusted_peer_is_taken_as_is() {
        let peer: SocketAddr = "203.0.113.9:5000".parse().unwrap();
        assert_eq!(client_ip(peer, &headers("1.2.3.4"), &[]), peer.ip());
    }

    #[test]
    fn trusted_proxy_forwards_the_rightmost_untrusted_address() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let peer: SocketAddr = "10.0.0.2:5000".parse().unwrap();
        let ip = client_ip(peer, &headers("6.6.6.6, 198.51.100.7, 10.0.0.5"), &trusted);
        assert_eq!(ip, "198.51.100.7".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn several_header_lines_read_as_one_list() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let peer: SocketAddr = "10.0.0.2:5000".parse().unwrap();
        let mut h = headers("6.6.6.6, 198.51.100.7");
        h.append("x-forwarded-for", HeaderValue::from_static("10.0.0.9"));
        let ip = client_ip(peer, &h, &trusted);
        assert_eq!(ip, "198.51.100.7".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn a_hop_that_is_not_an_address_ends_the_walk() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let peer: SocketAddr = "10.0.0.2:5000".parse().unwrap();
        // Skipping `bogus` would hand the client the address it wrote to its left.
        let ip = client_ip(peer, &headers("6.6.6.6, bogus, 10.0.0.9"), &trusted);
        assert_eq!(ip, "10.0.0.9".parse::<IpAddr>().unwrap());
        let ip = client_ip(peer, &headers("6.6.6.6, bogus"), &trusted);
        assert_eq!(ip, peer.ip());
        // An empty hop or one with a port is no address either.
        let ip = client_ip(peer, &headers("6.6.6.6, , 10.0.0.9"), &trusted);
        assert_eq!(ip, "10.0.0.9".parse::<IpAddr>().unwrap());
        let ip = client_ip(peer, &headers("6.6.6.6, 198.51.100.7:4000"), &trusted);
        assert_eq!(ip, peer.ip());
        // A header line that is not text ends it too.
        let mut h = headers("6.6.6.6");
        h.append(
            "x-forwarded-for",
            HeaderValue::from_bytes(b"\xff\xfe").unwrap(),
        );
        assert_eq!(client_ip(peer, &h, &trusted), peer.ip());
    }

    #[test]
    fn an_ipv6_client_counts_as_its_slash_64() {
        let a: SocketAddr = "[2001:db8:1:2:aaaa::1]:5000".parse().unwrap();
        let b: SocketAddr = "[2001:db8:1:2:ffff:1:2:3]:5000".parse().unwrap();
        let other: SocketAddr = "[2001:db8:1:3::1]:5000".parse().unwrap();
        let none = HeaderMap::new();
        let key_a = client_ip(a, &none, &[]);
        assert_eq!(key_a, "2001:db8:1:2::".parse::<IpAddr>().unwrap());
        assert_eq!(client_ip(b, &none, &[]), key_a);
        assert_ne!(client_ip(other, &none, &[]), key_a);
        // Forwarded IPv6 clients too.
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let proxy: SocketAddr = "10.0.0.2:5000".parse().unwrap();
        let ip = client_ip(proxy, &headers("2001:db8:1:2:1234::9"), &trusted);
        assert_eq!(ip, key_a);
    }

    #[test]
    fn an_ipv4_address_in_ipv6_form_is_the_ipv4_address() {
        let mapped: SocketAddr = "[::ffff:203.0.113.9]:5000".parse().unwrap();
        let ip = client_ip(mapped, &HeaderMap::new(), &[]);
        assert_eq!(ip, "203.0.113.9".parse::<IpAddr>().unwrap());
        // And a trusted proxy on a dual-stack socket is still recognised.
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let proxy: SocketAddr = "[::ffff:10.0.0.2]:5000".parse().unwrap();
        let ip = client_ip(proxy, &headers("198.51.100.7"), &trusted);
        assert_eq!(ip, "198.51.100.7".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn trusted_proxy_without_header_is_the_client() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let peer: SocketAddr = "10.0.0.2:5000".parse().unwrap();
        assert_eq!(client_ip(peer, &HeaderMap::new(), &trusted), peer.ip());
    }
}
