//! `/metrics` after a scripted mini-sale, read with a real Prometheus text parser
//! (`nom-openmetrics`): every family the operations side relies on is there, with its type and
//! plausible values (counters at least what the sale did).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashMap;
use std::time::Duration;

use nom_openmetrics::{MetricDescriptor, MetricType};
use serde_json::json;

use support::{Backends, spawn_app};

/// A parsed family: its declared type and its samples (name, labels, value).
struct Family {
    kind: String,
    samples: Vec<(String, HashMap<String, String>, f64)>,
}

struct Scrape(HashMap<String, Family>);

impl Scrape {
    fn parse(text: &str) -> Self {
        // The text format ignores empty lines (the exporter puts one between families); this
        // parser does not, so they go before parsing. Every other line is parsed as is.
        let mut lines: String = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        lines.push('\n');
        let (rest, families) = nom_openmetrics::parser::prometheus(&lines).unwrap_or_else(|e| {
            let e = format!("{e:?}");
            panic!(
                "/metrics is not Prometheus text: {}",
                &e[..e.len().min(600)]
            )
        });
        assert!(rest.trim().is_empty(), "unparsed tail of /metrics: {rest}");
        let mut out = HashMap::new();
        for family in families {
            let Some((name, kind)) = family.descriptors.iter().find_map(|d| match d {
                MetricDescriptor::Type { metric, r#type } => {
                    Some(((*metric).to_owned(), type_name(r#type)))
                }
                _ => None,
            }) else {
                continue;
            };
            let samples = family
                .samples
                .iter()
                .map(|s| {
                    let labels = s
                        .labels()
                        .iter()
                        .map(|l| (l.name.to_owned(), l.value.clone()))
                        .collect();
                    (s.name().to_owned(), labels, s.number())
                })
                .collect();
            out.insert(name, Family { kind, samples });
        }
        Scrape(out)
    }

    /// The family, asserting its type.
    fn family(&self, name: &str, kind: &str) -> &Family {
        let family = self
            .0
            .get(name)
            .unwrap_or_else(|| panic!("/metrics has no {name} (has: {:?})", self.names()));
        assert_eq!(family.kind, kind, "{name} is a {}", family.kind);
        family
    }

    fn names(&self) -> Vec<&String> {
        let mut names: Vec<_> = self.0.keys().collect();
        names.sort();
        names
    }

    /// Sum of the samples named `sample` whose labels include `labels`.
    fn value(&self, name: &str, kind: &str, sample: &str, labels: &[(&str, &str)]) -> f64 {
        self.family(name, kind)
            .samples
            .iter()
            .filter(|(n, l, _)| {
                n == sample
                    && labels
                        .iter()
                        .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|(_, _, v)| v)
            .sum()
    }

    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value(name, "counter", name, labels)
    }

    fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value(name, "gauge", name, labels)
    }

    /// Observations recorded by a histogram (its `_count`).
    fn observed(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value(name, "histogram", &format!("{name}_count"), labels)
    }

    fn has_series(&self, name: &str, kind: &str, labels: &[(&str, &str)]) -> bool {
        self.family(name, kind).samples.iter().any(|(_, l, _)| {
            labels
                .iter()
                .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
    }
}

fn type_name(kind: &MetricType) -> String {
    kind.to_string().to_lowercase()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_cover_a_mini_sale() {
    let app = spawn_app(Backends::Postgres).await;
    let rate = 6000;
    let event = app
        .create_event(
            10,
            json!({"rate_per_min": rate, "max_active": 50, "offer_s": 60}),
        )
        .await;
    let seat = support::buyer::seat;

    // Three buyers admitted; two hold and pay, one loses a race for a seat.
    let a = app.admit(&event).await;
    let b = app.admit(&event).await;
    let c = app.admit(&event).await;
    let ha = app.hold(&a, &[seat(1)]).await.expect(201).str("hold_id");
    app.hold(&c, &[seat(1)])
        .await
        .expect_problem(409, "seat_unavailable");
    let hb = app.hold(&b, &[seat(2)]).await.expect(201).str("hold_id");
    app.checkout(&a, &ha, "pm_card_visa", "pay-a")
        .await
        .expect(202);
    app.checkout(&b, &hb, "pm_card_visa", "pay-b")
        .await
        .expect(202);
    app.wait_confirmed(&a, &ha).await;
    app.wait_confirmed(&b, &hb).await;

    // A buyer listening on the waiting-room socket (live sockets, fan-out per tick).
    let listening = app.join_queue(&event).await;
    let mut socket = app.open_socket(&listening).await;
    socket.next().await.expect("the socket speaks");
    // Ticks reach sockets only when the queue changes: joins in separate ticks make separate ticks, and a
    // tick's fan-out time is recorded when the next one begins.
    for _ in 0..3 {
        app.join_queue(&event).await;
        // The meter ticks every 100 ms: joins further apart land in different ticks.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // An offer nobody claims, on an event with one-second offers: it lapses.
    let lapsing = app
        .create_event(
            2,
            json!({"rate_per_min": rate, "max_active": 5, "offer_s": 1}),
        )
        .await;
    app.join_queue(&lapsing).await;

    // The sampler runs once a second: wait until it has seen the sale's end.
    let started = tokio::time::Instant::now();
    let scrape = loop {
        let answer = app.get("/metrics").await.expect(200);
        assert!(answer.content_type.starts_with("text/plain"), "{answer:?}");
        let scrape = Scrape::parse(&answer.text);
        let seen = |name: &str| scrape.0.contains_key(name);
        if seen("floodgate_offer_lapses_total")
            && scrape.counter("floodgate_offer_lapses_total", &[("event", &lapsing)]) >= 1.0
            && seen("floodgate_paying_age_seconds")
            && scrape.observed("floodgate_paying_age_seconds", &[]) >= 2.0
            && seen("floodgate_payments_total")
            && scrape.counter("floodgate_payments_total", &[("outcome", "succeeded")]) >= 2.0
            && seen("floodgate_fanout_seconds")
            && scrape.observed("floodgate_fanout_seconds", &[("event", &event)]) >= 1.0
        {
            break scrape;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the sale never showed in /metrics: {:?}",
            scrape.names()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    // Queue: joins, offers, claims, lapses; sockets and fan-out.
    assert!(scrape.counter("floodgate_joins_total", &[]) >= 5.0);
    assert!(scrape.counter("floodgate_offers_total", &[("event", &event)]) >= 4.0);
    assert!(scrape.counter("floodgate_claims_total", &[]) >= 3.0);
    assert!(scrape.counter("floodgate_offer_lapses_total", &[("event", &lapsing)]) >= 1.0);
    assert!(scrape.gauge("floodgate_live_sockets", &[]) >= 1.0);
    assert!(scrape.observed("floodgate_fanout_seconds", &[("event", &event)]) >= 1.0);
    // Admissions per minute against the configured rate.
    let configured = scrape.gauge("floodgate_admission_rate_per_minute", &[("event", &event)]);
    assert_eq!(configured, f64::from(rate));
    assert!(scrape.has_series(
        "floodgate_admissions_per_minute",
        "gauge",
        &[("event", &event)]
    ));
    assert!(scrape.gauge("floodgate_admissions_per_minute", &[("event", &event)]) >= 0.0);
    assert_eq!(
        scrape.gauge("floodgate_admission_max_active", &[("event", &event)]),
        50.0
    );
    assert!(scrape.has_series(
        "floodgate_redis_epoch_changes_total",
        "counter",
        &[("event", &event)]
    ));

    // Reservation core: holds by outcome, payments by outcome, time spent paying.
    assert!(scrape.counter("floodgate_holds_total", &[("outcome", "held")]) >= 2.0);
    assert!(scrape.counter("floodgate_holds_total", &[("outcome", "conflict")]) >= 1.0);
    assert!(scrape.counter("floodgate_payments_total", &[("outcome", "succeeded")]) >= 2.0);
    assert!(scrape.observed("floodgate_paying_age_seconds", &[]) >= 2.0);
    assert!(scrape.gauge("floodgate_paying_oldest_age_seconds", &[]) >= 0.0);
    assert!(scrape.gauge("floodgate_outbox_depth", &[]) >= 0.0);
    assert!(scrape.gauge("floodgate_outbox_oldest_age_seconds", &[]) >= 0.0);
    assert!(scrape.gauge("floodgate_outbox_median_age_seconds", &[]) >= 0.0);
    assert!(scrape.gauge("floodgate_sweeper_lag_seconds", &[]) >= 0.0);
    assert!(scrape.gauge("floodgate_db_pool_waiters", &[]) >= 0.0);
    assert!(scrape.gauge("floodgate_db_pool_max_connections", &[]) >= 1.0);

    // Refusals by status and reason, present before the first one.
    for (status, reason) in [
        ("429", "join_limit"),
        ("503", "joins"),
        ("503", "reservations"),
        ("503", "webhooks"),
        ("503", "timeout"),
        ("503", "database"),
    ] {
        assert!(
            scrape.has_series(
                "floodgate_rejections_total",
                "counter",
                &[("status", status), ("reason", reason)]
            ),
            "no {status} {reason} series"
        );
    }
    // Latency per route.
    assert!(
        scrape.observed(
            "floodgate_http_request_duration_seconds",
            &[("route", "/api/events/{event}/holds")]
        ) >= 3.0
    );
    assert!(
        scrape.counter(
            "floodgate_http_requests_total",
            &[("route", "/api/events/{event}/queue")]
        ) >= 5.0
    );
    assert!(scrape.gauge("floodgate_inflight_limit", &[("group", "joins")]) >= 1.0);
    socket.close().await;
}
