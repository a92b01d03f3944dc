//! The bounds the OpenAPI document states are the ones the gateway enforces: each maximum and
//! minimum read from the served document is accepted at the bound and refused one past it with
//! 400 problem+json, and a refused request changes nothing. `null` is not "absent", lengths
//! are counted in characters as the document counts them, and a seat list as long as the
//! document allows fits the route's body limit. (schemathesis checks the same from the outside:
//! scripts/schemathesis.sh.)
#![allow(clippy::unwrap_used)]

use crate::support;

use reqwest::Method;
use serde_json::{Value, json};

use support::{Backends, TestApp, spawn_app};

fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    let schema = &doc["components"]["schemas"][name];
    assert!(schema.is_object(), "no schema {name}");
    schema
}

/// The integer properties of `schema` with the bound `keyword` (`minimum`, `maximum`).
fn bounded(schema: &Value, keyword: &str) -> Vec<(String, i64)> {
    schema["properties"]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(name, p)| Some((name.clone(), p[keyword].as_i64()?)))
        .collect()
}

fn fresh_id() -> String {
    format!("ev-bounds-{}", uuid::Uuid::now_v7().simple())
}

async fn create(app: &TestApp, body: &Value) -> support::http::Answer {
    app.send(app.admin(Method::POST, "/api/admin/events").json(body))
        .await
}

async fn exists(app: &TestApp, event: &str) -> bool {
    let id: reservation::EventId = event.parse().unwrap();
    app.store.get_event(&id).await.is_ok()
}

async fn version(app: &TestApp, event: &str) -> i64 {
    let id: reservation::EventId = event.parse().unwrap();
    app.store
        .admission_control(&id)
        .await
        .unwrap()
        .unwrap()
        .version
}

async fn seat_count(app: &TestApp, event: &str) -> i64 {
    let id: reservation::EventId = event.parse().unwrap();
    app.store.seat_count(&id).await.unwrap()
}

#[tokio::test]
async fn every_documented_maximum_is_enforced_and_a_refusal_changes_nothing() {
    let app = spawn_app(Backends::Embedded).await;
    let doc = app.get("/api/openapi.json").await.expect(200).body;

    // Creation: one past each maximum is refused and no event is made.
    let create_maxima = bounded(schema(&doc, "CreateEvent"), "maximum");
    let admission_maxima = bounded(schema(&doc, "NewEventAdmission"), "maximum");
    assert_eq!(create_maxima.len(), 5, "{create_maxima:?}");
    assert_eq!(admission_maxima.len(), 4, "{admission_maxima:?}");
    let bodies = create_maxima
        .iter()
        .map(|(field, max)| (field, json!({ field.as_str(): max + 1 })))
        .chain(
            admission_maxima
                .iter()
                .map(|(field, max)| (field, json!({"admission": { field.as_str(): max + 1 }}))),
        );
    for (field, mut body) in bodies {
        let event = fresh_id();
        body["event"] = json!(event);
        body["name"] = json!("Past the bound");
        let answer = create(&app, &body).await;
        answer.expect_problem(400, "out_of_range");
        assert_eq!(answer.body["field"], json!(field), "{answer:?}");
        assert!(!exists(&app, &event).await, "{field}: nothing created");
    }
    // At the maxima that agree with each other, the event is made.
    let at_max = |field: &str| {
        create_maxima
            .iter()
            .chain(&admission_maxima)
            .find(|(f, _)| f == field)
            .map(|(_, max)| *max)
            .unwrap()
    };
    let event = fresh_id();
    create(
        &app,
        &json!({"event": event, "name": "At the bound",
            "max_seats_per_hold": at_max("max_seats_per_hold"),
            "resolve_s": at_max("resolve_s"),
            "admission": {"rate_per_min": at_max("rate_per_min"), "max_active": at_max("max_active"),
                "offer_s": at_max("offer_s"), "session_s": at_max("session_s")}}),
    )
    .await
    .expect(201);

    // A live change: one past each maximum is refused and the settings keep their version.
    let before = version(&app, &event).await;
    let admission = format!("/api/admin/events/{event}/admission");
    for (field, max) in bounded(schema(&doc, "AdmissionSettings"), "maximum") {
        let answer = app
            .send(
                app.admin(Method::PATCH, &admission)
                    .json(&json!({ field.as_str(): max + 1 })),
            )
            .await;
        answer.expect_problem(400, "out_of_range");
        assert_eq!(answer.body["field"], json!(field), "{answer:?}");
    }
    assert_eq!(version(&app, &event).await, before, "nothing changed");

    // Seats: each documented maximum of a seat, listed or generated.
    let seats = format!("/api/admin/events/{event}/seats");
    let add_seats = schema(&doc, "AddSeats");
    let listed = &add_seats["oneOf"][0]["properties"]["seats"]["items"];
    let generated = &add_seats["oneOf"][1]["properties"]["generate"];
    for (field, max) in bounded(listed, "maximum") {
        let mut seat = json!({"seat_id": "X-1", "section": "A", "price_cents": 100});
        seat[field.as_str()] = json!(max + 1);
        app.send(
            app.admin(Method::POST, &seats)
                .json(&json!({ "seats": [seat] })),
        )
        .await
        .expect_problem(400, "out_of_range");
    }
    for (field, max) in bounded(generated, "maximum") {
        let mut block = json!({"section": "G", "rows": 1, "per_row": 1, "price_cents": 100});
        block[field.as_str()] = json!(max + 1);
        app.send(
            app.admin(Method::POST, &seats)
                .json(&json!({ "generate": block })),
        )
        .await
        .expect_problem(400, "out_of_range");
    }
    assert_eq!(seat_count(&app, &event).await, 0, "no seat added");

    // Stuck payments: the documented age is the largest asked for.
    let op = &doc["paths"]["/api/admin/events/{event}/stuck"]["get"];
    let max = op["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "older_than_s")
        .and_then(|p| p["schema"]["maximum"].as_i64())
        .expect("older_than_s states its maximum");
    let stuck = |age: i64| {
        app.admin(
            Method::GET,
            &format!("/api/admin/events/{event}/stuck?older_than_s={age}"),
        )
    };
    let answer = app.send(stuck(max)).await.expect(200);
    assert_eq!(answer.body["payments"], json!([]), "{answer:?}");
    let answer = app.send(stuck(max + 1)).await;
    answer.expect_problem(400, "out_of_range");
    assert_eq!(answer.body["field"], "older_than_s", "{answer:?}");
    app.send(stuck(-1))
        .await
        .expect_problem(400, "out_of_range");
}

/// An event starts with some outflow (minimum 1 at creation); a live change may stop it (0).
#[tokio::test]
async fn the_documented_minimum_outflow_differs_at_creation_and_live() {
    let app = spawn_app(Backends::Embedded).await;
    let doc = app.get("/api/openapi.json").await.expect(200).body;
    let minimum = |schema_name: &str, field: &str| {
        schema(&doc, schema_name)["properties"][field]["minimum"]
            .as_i64()
            .unwrap()
    };
    for field in ["rate_per_min", "max_active"] {
        assert_eq!(minimum("NewEventAdmission", field), 1, "{field}");
        assert_eq!(minimum("AdmissionSettings", field), 0, "{field}");
        let event = fresh_id();
        create(
            &app,
            &json!({"event": event, "name": "Still", "admission": { field: 0 }}),
        )
        .await
        .expect_problem(400, "bad_request");
        assert!(!exists(&app, &event).await);
    }
    let event = app.create_event(1, json!({})).await;
    let changed = app
        .tune(&event, json!({"rate_per_min": 0, "max_active": 0}))
        .await
        .expect(200);
    assert_eq!(changed.body["rate_per_min"], 0, "{changed:?}");
    // A change that names nothing is refused, as `minProperties` says.
    assert_eq!(schema(&doc, "AdmissionSettings")["minProperties"], 1);
}

/// An optional field is absent or a value: `null` is refused, and nothing changes.
#[tokio::test]
async fn null_is_not_absent() {
    let app = spawn_app(Backends::Embedded).await;
    for field in ["max_seats_per_hold", "opens_at", "currency"] {
        let event = fresh_id();
        create(&app, &json!({"event": event, "name": "Nulls", field: null}))
            .await
            .expect_problem(400, "bad_request");
        assert!(!exists(&app, &event).await, "{field}");
    }
    let event = app.create_event(1, json!({})).await;
    let before = version(&app, &event).await;
    for body in [
        json!({"paused": null}),
        json!({"session_s": null, "paused": true}),
    ] {
        app.tune(&event, body)
            .await
            .expect_problem(400, "bad_request");
    }
    assert_eq!(version(&app, &event).await, before, "nothing changed");
    app.send(
        app.admin(Method::POST, &format!("/api/admin/events/{event}/seats"))
            .json(&json!({"seats": null, "generate": {"section": "B", "rows": 1, "per_row": 1, "price_cents": 1}})),
    )
    .await
    .expect_problem(400, "bad_request");
    assert_eq!(seat_count(&app, &event).await, 1, "no seat added");
}

/// `maxLength` counts characters: a name of 200 two-byte characters is a name; a blank one is
/// not. A list of as many seats as the document allows fits its body limit, one more is refused.
#[tokio::test]
async fn lengths_are_characters_and_a_full_seat_list_fits() {
    let app = spawn_app(Backends::Embedded).await;
    let doc = app.get("/api/openapi.json").await.expect(200).body;
    let name = &schema(&doc, "CreateEvent")["properties"]["name"];
    let max_name = usize::try_from(name["maxLength"].as_u64().unwrap()).unwrap();
    let event = fresh_id();
    create(&app, &json!({"event": event, "name": "é".repeat(max_name)}))
        .await
        .expect(201);
    for bad in ["é".repeat(max_name + 1), "\u{3000} \t".into()] {
        let other = fresh_id();
        create(&app, &json!({"event": other, "name": bad}))
            .await
            .expect_problem(400, "bad_request");
        assert!(!exists(&app, &other).await);
    }

    let list = &schema(&doc, "AddSeats")["oneOf"][0]["properties"]["seats"];
    let max_seats = usize::try_from(list["maxItems"].as_u64().unwrap()).unwrap();
    let item = &list["items"]["properties"];
    let section_chars = usize::try_from(item["section"]["maxLength"].as_u64().unwrap()).unwrap();
    let row_chars = usize::try_from(item["row"]["maxLength"].as_u64().unwrap()).unwrap();
    let seat = |n: usize, row: &str| {
        json!({"seat_id": format!("S-{n}"), "section": "é".repeat(section_chars), "row": row,
               "number": n, "price_cents": 100})
    };
    let seats = format!("/api/admin/events/{event}/seats");
    let full: Vec<Value> = (0..max_seats).map(|n| seat(n, "R")).collect();
    let body = json!({ "seats": full });
    assert!(body.to_string().len() > 64 * 1024, "past the default limit");
    let added = app
        .send(app.admin(Method::POST, &seats).json(&body))
        .await
        .expect(200);
    assert_eq!(added.body["added"], json!(max_seats), "{added:?}");

    let mut over = full;
    over.push(seat(max_seats, "R"));
    app.send(
        app.admin(Method::POST, &seats)
            .json(&json!({ "seats": over })),
    )
    .await
    .expect_problem(400, "bad_request");
    app.send(
        app.admin(Method::POST, &seats)
            .json(&json!({"seats": [seat(max_seats + 1, &"r".repeat(row_chars + 1))]})),
    )
    .await
    .expect_problem(400, "bad_request");
    let count = usize::try_from(seat_count(&app, &event).await).unwrap();
    assert_eq!(count, max_seats, "nothing more added");
}
