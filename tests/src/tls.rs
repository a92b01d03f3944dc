//! Real TLS for tests: a certificate authority made at test time, a server certificate it
//! signs for `127.0.0.1` and `localhost`, the PEM files servers and clients are given, and any
//! axum router served over HTTPS (with the gateway's own TLS listener).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A CA, a server certificate it signed, and a second CA that signed nothing (the "wrong CA"
/// a client must refuse the server with), written as PEM files in a temporary folder.
pub struct Pki {
    pub dir: tempfile::TempDir,
    /// The CA that signed `cert_file`.
    pub ca_file: PathBuf,
    /// A CA unrelated to the server's certificate.
    pub wrong_ca_file: PathBuf,
    /// The server's certificate chain (leaf, then the CA).
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

impl Pki {
    /// Panics on failure: a test without its certificates cannot run.
    pub fn new() -> Pki {
        let dir = tempfile::Builder::new()
            .prefix("floodgate-tls-")
            .tempdir()
            .expect("create a temporary folder for the test certificates");
        let (ca_params, ca_key) = ca("Floodgate test CA");
        let ca_cert = ca_params
            .self_signed(&ca_key)
            .expect("self-sign the test CA");
        let issuer = Issuer::new(ca_params, ca_key);

        let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("server certificate names");
        leaf.distinguished_name
            .push(DnType::CommonName, "floodgate test server");
        // Client use too: Redis Cluster nodes present their own certificate to each other on
        // the cluster bus, which always asks for one.
        leaf.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let leaf_key = KeyPair::generate().expect("server key");
        let leaf_cert = leaf
            .signed_by(&leaf_key, &issuer)
            .expect("sign the server certificate");

        let (wrong_params, wrong_key) = ca("Some other CA");
        let wrong_cert = wrong_params
            .self_signed(&wrong_key)
            .expect("self-sign the other CA");

        let write = |name: &str, pem: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, pem).expect("write a PEM file");
            path
        };
        Pki {
            ca_file: write("ca.pem", ca_cert.pem()),
            wrong_ca_file: write("wrong-ca.pem", wrong_cert.pem()),
            cert_file: write(
                "server.pem",
                format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
            ),
            key_file: write("server.key", leaf_key.serialize_pem()),
            dir,
        }
    }

    pub fn ca_pem(&self) -> Vec<u8> {
        read(&self.ca_file)
    }

    pub fn wrong_ca_pem(&self) -> Vec<u8> {
        read(&self.wrong_ca_file)
    }

    /// An HTTPS client trusting `ca_file` (a PEM file) on top of the platform's roots.
    pub fn client(ca_file: &Path) -> reqwest::Client {
        let certs = reqwest::Certificate::from_pem_bundle(&read(ca_file)).expect("parse the CA");
        reqwest::Client::builder()
            .tls_certs_merge(certs)
            .timeout(std::time::Duration::from_secs(15))
            .build()
            .expect("build an HTTPS client")
    }
}

impl Default for Pki {
    fn default() -> Self {
        Self::new()
    }
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn ca(name: &str) -> (CertificateParams, KeyPair) {
    let mut params = CertificateParams::default();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    (params, KeyPair::generate().expect("CA key"))
}

/// A router served over HTTPS on `127.0.0.1:0`; dropping it stops the server.
pub struct HttpsServer {
    /// `https://127.0.0.1:PORT`.
    pub base_url: String,
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `router` with the PKI's server certificate.
pub async fn serve_https(router: axum::Router, pki: &Pki) -> HttpsServer {
    let config = gateway::tls::server_config(&pki.cert_file, &pki.key_file)
        .expect("a TLS configuration from the test certificate");
    let tcp = gateway::listener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("bind a loopback port");
    let addr = tcp.local_addr().expect("bound address");
    let listener = gateway::tls::TlsListener::new(tcp, config).expect("TLS listener");
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!(%error, "HTTPS test server stopped");
        }
    });
    HttpsServer {
        base_url: format!("https://{addr}"),
        addr,
        task,
    }
}
