//! Which payment provider a deployment sells through, decided once at start; and the payment
//! settings refused at start because they cannot work, so an organizer learns it before the
//! on-sale rather than from seats stuck in `paying` or sold for no money.

use std::net::IpAddr;

use crate::config::Config;

/// `FLOODGATE_PAYMENT`: the simulator asked for by name.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaymentChoice {
    /// The in-process simulator: every payment succeeds or fails for no money.
    Simulated,
}

/// What the gateway sells through, as `/readyz` and the dashboard show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaymentMode {
    Simulated,
    Provider,
}

impl PaymentMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentMode::Simulated => "simulated",
            PaymentMode::Provider => "provider",
        }
    }
}

/// A payment setting the gateway refuses to start with.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refusal {
    #[error(
        "a PostgreSQL deployment needs a payment provider: set FLOODGATE_PAYMENT_URL (and \
         FLOODGATE_PAYMENT_KEY), or FLOODGATE_PAYMENT=simulated to sell through the simulator \
         for no money"
    )]
    NoProvider,
    #[error("FLOODGATE_PAYMENT=simulated and FLOODGATE_PAYMENT_URL are both set: choose one")]
    Both,
    #[error("FLOODGATE_PAYMENT_URL {0:?} is not a URL with a host")]
    NotAUrl(String),
    #[error(
        "FLOODGATE_PAYMENT_URL {0:?}: the payment client speaks only https:// (or http:// on \
         loopback)"
    )]
    Scheme(String),
    #[error(
        "FLOODGATE_PAYMENT_URL {0:?} would send the secret API key in clear: use https:// \
         (plain http:// is only for a provider on loopback)"
    )]
    ClearText(String),
}

/// Judges the payment settings: the mode to run in, or why not to start.
pub fn payment_mode(config: &Config) -> Result<PaymentMode, Refusal> {
    match (&config.payment_url, config.payment) {
        (Some(_), Some(PaymentChoice::Simulated)) => Err(Refusal::Both),
        (Some(url), None) => check_url(url).map(|()| PaymentMode::Provider),
        (None, Some(PaymentChoice::Simulated)) => Ok(PaymentMode::Simulated),
        // The embedded SQLite default is a demonstration: the simulator is its provider.
        (None, None) if config.database_url.starts_with("sqlite:") => Ok(PaymentMode::Simulated),
        (None, None) => Err(Refusal::NoProvider),
    }
}

fn check_url(url: &str) -> Result<(), Refusal> {
    let uri: http::Uri = url.parse().map_err(|_| Refusal::NotAUrl(url.to_owned()))?;
    let (Some(scheme), Some(host)) = (uri.scheme_str(), uri.host()) else {
        return Err(Refusal::NotAUrl(url.to_owned()));
    };
    match scheme.to_ascii_lowercase().as_str() {
        "https" => Ok(()),
        "http" if is_loopback(host) => Ok(()),
        "http" => Err(Refusal::ClearText(url.to_owned())),
        _ => Err(Refusal::Scheme(url.to_owned())),
    }
}

fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    const SQLITE: &str = "sqlite:x.db";
    const PG: &str = "postgres://h/db";
    const SIMULATED: Option<PaymentChoice> = Some(PaymentChoice::Simulated);

    /// Built without clap, so the test environment's variables cannot decide.
    fn judge(
        database: &str,
        url: Option<&str>,
        choice: Option<PaymentChoice>,
    ) -> Result<PaymentMode, Refusal> {
        let mut config = Config::embedded("127.0.0.1:0".parse().unwrap(), database);
        config.payment_url = url.map(str::to_owned);
        config.payment = choice;
        payment_mode(&config)
    }

    #[test]
    fn the_setting_is_spelled_simulated() {
        let config = Config::parse_from(["gateway", "--payment", "simulated"]);
        assert_eq!(config.payment, SIMULATED);
        assert!(Config::try_parse_from(["gateway", "--payment", "free"]).is_err());
    }

    #[test]
    fn the_embedded_default_keeps_the_simulator() {
        assert_eq!(judge(SQLITE, None, None), Ok(PaymentMode::Simulated));
    }

    #[test]
    fn postgres_without_a_provider_is_refused() {
        assert_eq!(judge(PG, None, None), Err(Refusal::NoProvider));
    }

    #[test]
    fn postgres_with_the_simulator_asked_for_starts_simulated() {
        assert_eq!(judge(PG, None, SIMULATED), Ok(PaymentMode::Simulated));
    }

    #[test]
    fn postgres_with_an_https_provider_starts() {
        let ok = judge(PG, Some("https://api.stripe.com"), None);
        assert_eq!(ok, Ok(PaymentMode::Provider));
    }

    #[test]
    fn the_simulator_and_a_provider_together_are_refused() {
        let both = judge(PG, Some("https://api.stripe.com"), SIMULATED);
        assert_eq!(both, Err(Refusal::Both));
    }

    #[test]
    fn plain_http_is_refused_unless_on_loopback() {
        for url in [
            "http://api.stripe.com",
            "http://10.0.0.7:12111",
            "HTTP://pay.example",
        ] {
            assert_eq!(
                judge(PG, Some(url), None),
                Err(Refusal::ClearText(url.into()))
            );
        }
        for url in [
            "http://127.0.0.1:12111",
            "http://localhost:9",
            "http://[::1]:80/",
        ] {
            assert_eq!(judge(PG, Some(url), None), Ok(PaymentMode::Provider));
        }
    }

    #[test]
    fn schemes_the_client_cannot_speak_are_refused() {
        for url in ["ftp://pay.example", "unix://pay.sock"] {
            assert_eq!(judge(PG, Some(url), None), Err(Refusal::Scheme(url.into())));
        }
        for url in ["api.stripe.com", "https://", "not a url"] {
            assert_eq!(
                judge(PG, Some(url), None),
                Err(Refusal::NotAUrl(url.into()))
            );
        }
    }

    #[test]
    fn refusals_name_the_setting_to_change() {
        assert!(
            Refusal::NoProvider
                .to_string()
                .contains("FLOODGATE_PAYMENT=simulated")
        );
        let clear = Refusal::ClearText("http://pay.example".into()).to_string();
        assert!(clear.contains("in clear") && clear.contains("https://"));
    }
}
