//! The client address a join is limited by. `X-Forwarded-For` is believed only when the
//! connection comes from a configured trusted proxy, and then we take the right-most address
//! that is not itself a trusted proxy (the left-most entries are whatever the client wrote).

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

pub fn client_ip(peer: SocketAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let peer_ip = peer.ip();
    if !is_trusted(peer_ip, trusted) {
        return peer_ip;
    }
    // Read from the right, as proxies append: no list of addresses is built on every join.
    headers
        .get_all("x-forwarded-for")
        .iter()
        .rev()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.rsplit(','))
        .filter_map(|part| part.trim().parse::<IpAddr>().ok())
        .find(|ip| !is_trusted(*ip, trusted))
        .unwrap_or(peer_ip)
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
        h.append(
            "x-forwarded-for",
            HeaderValue::from_static("10.0.0.9, bogus"),
        );
        let ip = client_ip(peer, &h, &trusted);
        assert_eq!(ip, "198.51.100.7".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn trusted_proxy_without_header_is_the_client() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let peer: SocketAddr = "10.0.0.2:5000".parse().unwrap();
        assert_eq!(client_ip(peer, &HeaderMap::new(), &trusted), peer.ip());
    }
}
