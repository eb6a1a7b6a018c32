//! Part 3 of the CRD bench: 2,000 CRDs of about 5 KB of schema at c=16, then discovery,
//! OpenAPI and a restart.

use super::*;

/// A CRD of part 3: kind `i` of group `i / 20`, with about 5 KB of schema.
pub(crate) fn big_crd(i: usize) -> Value {
    let group = format!("g{}.providers.example.com", i / 20);
    let kind = format!("Resource{i}");
    let plural = format!("resource{i}s");
    let mut props = serde_json::Map::new();
    for p in 0..24 {
        let field = match p % 4 {
            0 => {
                json!({"type": "string", "maxLength": 253, "description": format!("The name of the upstream object that field {p} refers to, as the provider's API spells it.")})
            }
            1 => {
                json!({"type": "integer", "minimum": 0, "maximum": 65535, "description": format!("A count or port the provider sets for field {p}; zero leaves it to the cloud.")})
            }
            2 => {
                json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "description": format!("Tags for field {p}, merged as a set.")})
            }
            _ => {
                json!({"type": "object", "additionalProperties": {"type": "string"}, "description": format!("Labels copied onto the external resource for field {p}.")})
            }
        };
        props.insert(format!("field{p}"), field);
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group, "scope": "Cluster",
            "names": {"plural": plural, "singular": format!("resource{i}"), "kind": kind,
                      "categories": ["managed", "providers"]},
            "versions": [{"name": "v1beta1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "READY", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Ready')].status"},
                    {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "forProvider": {"type": "object", "properties": props},
                        "deletionPolicy": {"type": "string", "enum": ["Orphan", "Delete"], "default": "Delete"}
                    }},
                    "status": {"type": "object", "properties": {
                        "conditions": {"type": "array", "items": {"type": "object",
                            "required": ["type", "status"],
                            "properties": {"type": {"type": "string"}, "status": {"type": "string"},
                                           "reason": {"type": "string"}, "message": {"type": "string"},
                                           "lastTransitionTime": {"type": "string", "format": "date-time"}}},
                            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}
                    }}
                }}}}]
        }
    })
}

/// Median wall time of 10 GETs of `path` with `accept`, in ms.
pub(crate) async fn timed_get(
    client: &reqwest::Client,
    url: &str,
    path: &str,
    accept: &str,
    encoding: Option<&str>,
) -> Res<(f64, f64, usize)> {
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..10 {
        let start = Instant::now();
        let mut req = client.get(format!("{url}{path}")).header("accept", accept);
        if let Some(encoding) = encoding {
            req = req.header("accept-encoding", encoding);
        }
        let resp = req.send().await?;
        if !resp.status().is_success() {
            return Err(format!("GET {path}: {}", resp.status()).into());
        }
        size = resp.bytes().await?.len();
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    Ok((times[0], median(times), size))
}

const PROTO_V2: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// Part 3: many CRDs at c=16, then discovery, OpenAPI and a restart.
pub(crate) async fn many_crds(server: Server, dir: &std::path::Path, s: &Settings) -> Res<()> {
    let admin = server.client(true)?;
    let url = server.url.clone();
    let sample = serde_json::to_vec(&big_crd(0))?.len();
    let start = Instant::now();
    let posts = futures::stream::iter(0..s.many_crds)
        .map(|i| {
            let admin = admin.clone();
            let url = url.clone();
            async move {
                post(
                    &admin,
                    &url,
                    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                    &big_crd(i),
                )
                .await
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    if let Some(Err(e)) = posts.into_iter().find(Result::is_err) {
        return Err(e);
    }
    let posted = start.elapsed();
    loop {
        let list: Value = admin
            .get(format!(
                "{url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
            ))
            .send()
            .await?
            .json()
            .await?;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        let done = items
            .iter()
            .filter(|c| {
                c["spec"]["group"]
                    .as_str()
                    .is_some_and(|g| g.ends_with(".providers.example.com"))
            })
            .filter(|c| is_established(c))
            .count();
        if done >= s.many_crds {
            break;
        }
        if start.elapsed() > Duration::from_secs(300) {
            return Err(format!(
                "only {done} of {} CRDs Established after 300 s",
                s.many_crds
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let all_established = start.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss = rss_mib(server.child.id());
    println!(
        "\n{} CRDs of {sample} bytes each POSTed at c=16 in {:.1} s; all Established after {:.1} s; RSS afterwards {rss:.0} MiB",
        s.many_crds,
        posted.as_secs_f64(),
        all_established.as_secs_f64()
    );
    println!("| request | first | median of 10 | response bytes |");
    println!("|---|---|---|---|");
    for (label, path, accept, encoding) in [
        ("GET /apis", "/apis", "application/json", None),
        (
            "GET /apis (aggregated discovery v2)",
            "/apis",
            AGGREGATED,
            None,
        ),
        ("GET /openapi/v3", "/openapi/v3", "application/json", None),
        // As kubectl asks for it (validating a List): protobuf, gzip accepted by Go's transport.
        (
            "GET /openapi/v2 (protobuf, gzip)",
            "/openapi/v2",
            PROTO_V2,
            Some("gzip"),
        ),
    ] {
        let (first, ms, size) = timed_get(&admin, &url, path, accept, encoding).await?;
        println!("| {label} | {first:.1} ms | {ms:.1} ms | {size} |");
    }
    // What the CRDs take once the controllers have caught up with them.
    let settle_start = Instant::now();
    let mut samples = Vec::new();
    while settle_start.elapsed() < s.settle {
        tokio::time::sleep(Duration::from_secs(5)).await;
        samples.push(rss_mib(server.child.id()));
    }
    if let Some(last) = samples.last() {
        let most = samples.iter().copied().fold(rss, f64::max);
        let shown: Vec<String> = samples.iter().map(|m| format!("{m:.0}")).collect();
        println!(
            "RSS over the {:.0} s after: at most {most:.0} MiB, at the end {last:.0} MiB (every 5 s: {})",
            s.settle.as_secs_f64(),
            shown.join(", ")
        );
    }
    drop(admin);
    server.stop().await?;
    let mut starts = Vec::new();
    for _ in 0..3 {
        let server = Server::start(dir).await?;
        starts.push(server.ready_after.as_secs_f64() * 1000.0);
        server.stop().await?;
    }
    println!(
        "restart with {} CRDs, spawn → /readyz 200: median {:.0} ms over {} restarts",
        s.many_crds,
        median(starts.clone()),
        starts.len()
    );
    Ok(())
}
