//! Tests of spec.conversion: strategy, webhook client config (URL, service, CA bundle) and
//! conversionReviewVersions, with upstream's paths and texts.

use serde_json::{json, Value};

use super::tests::{create, crontab, update, with, without, DNS1035};

// validation_test.go "webhookconfig: ..." and "missing_webhookconfig".
#[test]
fn conversion_webhook_rules() {
    let conv = |c: Value| with(crontab(), "/spec/conversion", c);
    assert_eq!(
        create(conv(json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}}))),
        ["spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"]
    );
    assert_eq!(
        create(conv(json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "http://example.com/convert"}}}))),
        ["spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]"]
    );
    assert_eq!(
        create(conv(json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
            "url": "https://example.com/convert",
            "service": {"name": "svc", "namespace": "ns"}
        }}}))),
        ["spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"]
    );
    assert_eq!(
        create(conv(json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
            "service": {"name": "svc", "namespace": "ns", "port": 0, "path": "convert"}
        }}}))),
        [
            "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
            "spec.conversion.webhookClientConfig.service.path: Invalid value: \"convert\": must start with a '/'",
        ]
    );
    assert_eq!(
        create(conv(json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v2", "v2", "V3"], "clientConfig": {
            "service": {"name": "svc", "namespace": "ns"}
        }}}))),
        [
            "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version".to_string(),
            format!("spec.conversion.conversionReviewVersions[2]: Invalid value: \"V3\": {DNS1035}"),
            "spec.conversion.conversionReviewVersions: Invalid value: [\"v2\",\"v2\",\"V3\"]: must include at least one of v1, v1beta1".to_string(),
        ]
    );
    assert_eq!(
        create(conv(
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": [], "clientConfig": {
                "service": {"name": "svc", "namespace": "ns"}
            }}})
        )),
        ["spec.conversion.conversionReviewVersions: Required value"]
    );
    assert_eq!(
        create(conv(json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://x"}}}))),
        [
            "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
            "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
        ]
    );
    assert_eq!(
        create(conv(json!({"strategy": "Magic"}))),
        ["spec.conversion.strategy: Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\""]
    );
}

// validation_test.go "webhookconfig: invalid CABundle should be allowed on Create".
#[test]
fn an_invalid_ca_bundle_is_refused_only_once_established_with_a_valid_one() {
    let conv = |bundle: &str| {
        let v = with(
            crontab(),
            "/spec/conversion",
            json!({"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "svc", "namespace": "ns"}, "caBundle": bundle}
            }}),
        );
        with(
            v,
            "/status/conditions",
            json!([{"type": "Established", "status": "True"}]),
        )
    };
    // "Zm9v" is base64 of "foo": no PEM at all.
    assert_eq!(create(conv("Zm9v")), Vec::<String>::new());
    assert_eq!(update(conv("Zm9v"), conv("Zm9v")), Vec::<String>::new());
    let old_without_bundle = without(
        conv("Zm9v"),
        "/spec/conversion/webhook/clientConfig/caBundle",
    );
    assert_eq!(
        update(conv("Zm9v"), old_without_bundle),
        ["spec.conversion.webhookClientConfig.caBundle: Invalid value: \"Zm9v\": unable to load root certificates: unable to parse bytes as PEM block"]
    );
}

// ValidateWebhookURL / ValidateWebhookService (k8s.io/apiserver pkg/util/webhook).
#[test]
fn webhook_url_and_service_details() {
    let client = |cc: Value| {
        with(
            crontab(),
            "/spec/conversion",
            json!({"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"], "clientConfig": cc
            }}),
        )
    };
    assert_eq!(
        create(client(json!({"url": "https://user:pw@example.com/convert?x=1#frag"}))),
        [
            "spec.conversion.webhookClientConfig.url: Invalid value: \"user:pw\": user information is not permitted in the URL",
            "spec.conversion.webhookClientConfig.url: Invalid value: \"frag\": fragments are not permitted in the URL",
            "spec.conversion.webhookClientConfig.url: Invalid value: \"x=1\": query parameters are not permitted in the URL",
        ]
    );
    assert_eq!(
        create(client(json!({"url": "https://[::1"}))),
        ["spec.conversion.webhookClientConfig.url: Required value: url must be a valid URL: parse \"https://[::1\": missing ']' in host; desired format: https://host[/path]"]
    );
    assert_eq!(
        create(client(json!({"url": "https:///convert"}))),
        ["spec.conversion.webhookClientConfig.url: Invalid value: \"\": host must be specified; desired format: https://host[/path]"]
    );
    assert_eq!(
        create(client(json!({"service": {"name": "", "namespace": "", "path": "/a//B/"}}))),
        [
            "spec.conversion.webhookClientConfig.service.name: Required value".to_string(),
            "spec.conversion.webhookClientConfig.service.namespace: Required value".to_string(),
            "spec.conversion.webhookClientConfig.service.path: Invalid value: \"/a//B/\": segment[1] may not be empty".to_string(),
            format!(
                "spec.conversion.webhookClientConfig.service.path: Invalid value: \"/a//B/\": segment[2]: {}",
                crate::api::selectors::DNS1123_SUBDOMAIN_MSG
            ),
        ]
    );
}
