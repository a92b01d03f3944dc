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

    pub async fn set_knobs(&self, patch: &KnobsPatch) -> anyhow::Result<Knobs> {
        let url = format!("{}/_sim/knobs", self.base_url);
        Ok(self
            .http
            .post(url)
            .json(patch)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?)
    }

    pub async fn knobs(&self) -> anyhow::Result<Knobs> {
        let url = format!("{}/_sim/knobs", self.base_url);
        Ok(self
            .http
            .get(url)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?)
    }

    pub async fn pause(&self) -> anyhow::Result<()> {
        self.post_empty("pause").await
    }

    pub async fn resume(&self) -> anyhow::Result<()> {
        self.post_empty("resume").await
    }

    pub async fn ledger(&self) -> anyhow::Result<Ledger> {
        let url = format!("{}/_sim/ledger", self.base_url);
        Ok(self
            .http
            .get(url)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?)
    }

    async fn post_empty(&self, what: &str) -> anyhow::Result<()> {
        let url = format!("{}/_sim/{what}", self.base_url);
        self.http.post(url).send().await?.error_for_status()?;
        Ok(())
    }
}
