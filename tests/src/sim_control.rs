//! A client for a simulator's `/_sim/*` control routes, for tools in another process
//! (the soak tool reads the ledger this way).

use reservation::payments::simulator::{Knobs, KnobsPatch, Ledger};

#[derive(Clone)]
pub struct SimControl {
    http: reqwest::Client,
    base_url: String,
}

impl SimControl {
    pub fn new(base_url: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            base_url: base_url.trim_end_matches('/').to_owned(),
        }
    }

    fn url(&self, route: &str) -> String {
        format!("{}/_sim/{route}", self.base_url)
    }

    async fn json<T: serde::de::DeserializeOwned>(
        request: reqwest::RequestBuilder,
    ) -> anyhow::Result<T> {
        Ok(request.send().await?.error_for_status()?.json().await?)
    }

    pub async fn set_knobs(&self, patch: &KnobsPatch) -> anyhow::Result<Knobs> {
        Self::json(self.http.post(self.url("knobs")).json(patch)).await
    }

    pub async fn knobs(&self) -> anyhow::Result<Knobs> {
        Self::json(self.http.get(self.url("knobs"))).await
    }

    pub async fn ledger(&self) -> anyhow::Result<Ledger> {
        Self::json(self.http.get(self.url("ledger"))).await
    }

    pub async fn pause(&self) -> anyhow::Result<()> {
        self.http
            .post(self.url("pause"))
            .send()
            .await?
            .error_for_status()?;
        Ok(())
    }

    pub async fn resume(&self) -> anyhow::Result<()> {
        self.http
            .post(self.url("resume"))
            .send()
            .await?
            .error_for_status()?;
        Ok(())
    }
}
