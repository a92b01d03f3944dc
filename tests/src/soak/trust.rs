//! What `https://` gateways are trusted by: the platform's roots and `--ca-file`, for the
//! HTTP clients (reqwest) and the waiting-room sockets (rustls) alike.

use std::path::Path;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

#[derive(Clone)]
pub struct Trust {
    /// For reqwest, on top of its platform verifier.
    pub extra: Vec<reqwest::Certificate>,
    /// For `wss://`.
    pub sockets: Arc<ClientConfig>,
}

impl Trust {
    pub fn load(ca_file: Option<&Path>) -> anyhow::Result<Trust> {
        let pem = match ca_file {
            Some(path) => std::fs::read(path)
                .map_err(|e| anyhow::anyhow!("--ca-file {}: {e}", path.display()))?,
            None => Vec::new(),
        };
        let extra = if pem.is_empty() {
            Vec::new()
        } else {
            reqwest::Certificate::from_pem_bundle(&pem)?
        };
        let ders = CertificateDer::pem_slice_iter(&pem).collect::<Result<Vec<_>, _>>()?;
        anyhow::ensure!(
            ca_file.is_none() || !ders.is_empty(),
            "--ca-file holds no certificate"
        );
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier =
            rustls_platform_verifier::Verifier::new_with_extra_roots(ders, provider.clone())?;
        let sockets = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        Ok(Trust {
            extra,
            sockets: Arc::new(sockets),
        })
    }
}
