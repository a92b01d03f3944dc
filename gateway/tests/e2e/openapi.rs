//! `GET /api/openapi.json`: a valid OpenAPI 3.1 document (parsed by the `oas3` crate, and
//! checked for what a client generator relies on), covering every route of API.md, with every
//! operation it lists actually routed by the gateway.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::Value;

use support::contract::API_MD;
use support::{Backends, spawn_app};

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths is an object") {
        for method in item.as_object().expect("a path item is an object").keys() {
            if METHODS.contains(&method.as_str()) {
                out.insert((method.clone(), path.clone()));
            }
        }
    }
    out
}

#[tokio::test]
async fn the_document_is_valid_openapi_and_covers_api_md() {
    let app = spawn_app(Backends::Embedded).await;
    let answer = app.get("/api/openapi.json").await.expect(200);
    assert!(
        answer.content_type.starts_with("application/json"),
        "{answer:?}"
    );

    // Structurally valid OpenAPI 3.1 (oas3 deserializes the whole document into its model).
    let spec = oas3::from_json(&answer.text)
        .unwrap_or_else(|e| panic!("not a valid OpenAPI 3.1 document: {e}"));
    assert!(spec.openapi.starts_with("3."), "{}", spec.openapi);
    assert!(!spec.info.title.is_empty());
    let typed_paths = spec.paths.as_ref().expect("paths");
    let doc = &answer.body;

    for (method, path) in operations(doc) {
        let op = &doc["paths"][&path][&method];
        // Every operation answers something, and documents its problem+json refusals.
        let responses = op["responses"].as_object().expect("responses");
        assert!(
            responses
                .keys()
                .any(|k| k.starts_with('1') || k.starts_with('2')),
            "{method} {path} has no success response"
        );
        // Every template parameter is declared as a required path parameter.
        let declared: BTreeSet<&str> = op["parameters"]
            .as_array()
            .map(|ps| {
                ps.iter()
                    .filter(|p| p["in"] == "path" && p["required"] == true)
                    .filter_map(|p| p["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        let templated: BTreeSet<&str> = path
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .collect();
        assert_eq!(declared, templated, "{method} {path}: path parameters");
        // Security names only declared schemes.
        for requirement in op["security"].as_array().into_iter().flatten() {
            for scheme in requirement.as_object().unwrap().keys() {
                assert!(
                    doc["components"]["securitySchemes"][scheme].is_object(),
                    "{method} {path} uses undeclared scheme {scheme}"
                );
            }
        }
        assert!(typed_paths.contains_key(&path), "{path} lost by the parser");
    }

    // Covers API.md exactly: nothing missing, nothing undocumented.
    let documented = operations(doc);
    let contract: BTreeSet<(String, String)> = API_MD
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    let missing: Vec<_> = contract.difference(&documented).collect();
    assert!(
        missing.is_empty(),
        "API.md routes missing from the document: {missing:?}"
    );
    let extra: Vec<_> = documented.difference(&contract).collect();
    assert!(
        extra.is_empty(),
        "documented routes API.md does not have: {extra:?}"
    );
}

#[tokio::test]
async fn every_documented_operation_is_routed() {
    let app = spawn_app(Backends::Embedded).await;
    let doc = app.get("/api/openapi.json").await.expect(200).body;
    let unknown = app.get("/api/no/such/route").await;
    unknown.expect_problem(404, "not_found");
    assert_eq!(unknown.body["detail"], "no such route");
    for (method, path) in operations(&doc) {
        let concrete = path
            .replace("{event}", "openapi-dummy")
            .replace("{hold}", "h_dummy")
            .replace("{order}", "o_dummy")
            .replace("{webhook}", "wh_dummy");
        let verb = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let answer = app
            .send(
                app.request(verb, &concrete)
                    .header("content-type", "application/json")
                    .body("{}"),
            )
            .await;
        assert!(
            answer.body["detail"] != "no such route" && answer.status != 405,
            "the document lists {method} {path} but the router does not route it: {answer:?}"
        );
    }
}
