//! The tables of `kapi top`: a summary line per apiserver, then the rows (see
//! [`super::top`] for the columns), with rates, latencies and sizes formatted for people.

use std::io::{self, Write};

use super::top::TopView;
use crate::output::{self, Cell, Tabular, Tone};

/// `resource.group/subresource`, as kubectl names resources; the path of a non-resource row.
pub(crate) fn resource_name(group: &str, resource: &str, subresource: &str) -> String {
    if resource.is_empty() {
        return if subresource.is_empty() {
            "-".into()
        } else {
            subresource.into()
        };
    }
    let mut name = resource.to_string();
    if !group.is_empty() {
        name = format!("{name}.{group}");
    }
    if !subresource.is_empty() {
        name = format!("{name}/{subresource}");
    }
    name
}

/// A rate for a table: two decimals below 10/s, one below 100/s, none above.
fn rate(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x < 10.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// A latency for a table, in µs, ms or s with two or three significant digits.
fn latency(s: Option<f64>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s < 0.001 => format!("{:.0}µs", s * 1e6),
        Some(s) if s < 0.01 => format!("{:.2}ms", s * 1e3),
        Some(s) if s < 0.1 => format!("{:.1}ms", s * 1e3),
        Some(s) if s < 1.0 => format!("{:.0}ms", s * 1e3),
        Some(s) if s < 10.0 => format!("{s:.2}s"),
        Some(s) => format!("{s:.1}s"),
    }
}

/// Bytes in binary units, as kubectl top shows memory (`52Mi`).
fn bytes(b: Option<u64>) -> String {
    let Some(b) = b else { return "-".into() };
    let units = [("Gi", 1u64 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)];
    units
        .iter()
        .find(|(_, size)| b >= *size)
        .map(|(unit, size)| format!("{:.0}{unit}", b as f64 / *size as f64))
        .unwrap_or_else(|| b.to_string())
}

fn count(n: Option<u64>) -> String {
    n.map_or_else(|| "-".into(), |n| n.to_string())
}

fn errors(x: f64) -> Cell {
    if x > 0.0 {
        Cell::toned(rate(x), Tone::Bad)
    } else {
        Cell::plain("0")
    }
}

impl Tabular for TopView {
    fn headers(&self, wide: bool) -> Vec<&'static str> {
        let mut h = Vec::new();
        if self.multi_server {
            h.push("APISERVER");
        }
        h.extend(["VERB", "RESOURCE", "REQ/S", "5XX/S", "P50", "P99"]);
        if wide {
            h.extend(["4XX/S", "P90"]);
            if !self.multi_server {
                h.push("APISERVER");
            }
        }
        h
    }

    fn rows(&self, wide: bool) -> Vec<Vec<Cell>> {
        let mut rows = Vec::new();
        for a in &self.apiservers {
            for r in &a.requests {
                let mut row = Vec::new();
                if self.multi_server {
                    row.push(Cell::plain(&a.apiserver));
                }
                row.extend([
                    Cell::plain(&r.verb),
                    Cell::plain(resource_name(&r.group, &r.resource, &r.subresource)),
                    Cell::plain(rate(r.requests_per_second)),
                    errors(r.server_errors_per_second),
                    Cell::plain(latency(r.p50_seconds)),
                    Cell::plain(latency(r.p99_seconds)),
                ]);
                if wide {
                    row.push(Cell::plain(rate(r.client_errors_per_second)));
                    row.push(Cell::plain(latency(r.p90_seconds)));
                    if !self.multi_server {
                        row.push(Cell::plain(&a.apiserver));
                    }
                }
                rows.push(row);
            }
        }
        rows
    }

    fn names(&self) -> Vec<String> {
        self.apiservers
            .iter()
            .flat_map(|a| a.requests.iter())
            .map(|r| {
                let resource = resource_name(&r.group, &r.resource, &r.subresource);
                format!("{}/{resource}", r.verb.to_lowercase())
            })
            .collect()
    }
}

/// The summary table of a sample: one line per apiserver.
struct Summary<'a>(&'a TopView);

impl Tabular for Summary<'_> {
    fn headers(&self, _wide: bool) -> Vec<&'static str> {
        vec![
            "APISERVER",
            "INFLIGHT-RO",
            "INFLIGHT-MUT",
            "LONGRUNNING",
            "RSS",
            "CPU",
            "REQ/S",
            "5XX/S",
        ]
    }

    fn rows(&self, _wide: bool) -> Vec<Vec<Cell>> {
        let mut rows: Vec<Vec<Cell>> = self
            .0
            .apiservers
            .iter()
            .map(|a| {
                vec![
                    Cell::plain(&a.apiserver),
                    Cell::plain(count(a.in_flight.read_only)),
                    Cell::plain(count(a.in_flight.mutating)),
                    Cell::plain(count(a.long_running)),
                    Cell::plain(bytes(a.resident_memory_bytes)),
                    Cell::plain(a.cpu_percent.map_or("-".into(), |c| format!("{c:.1}%"))),
                    Cell::plain(rate(a.requests_per_second)),
                    errors(a.server_errors_per_second),
                ]
            })
            .collect();
        for u in &self.0.unreachable {
            let mut row = vec![
                Cell::plain(&u.apiserver),
                Cell::toned("unreachable", Tone::Bad),
            ];
            row.resize(8, Cell::plain(""));
            rows.push(row);
        }
        rows
    }

    fn names(&self) -> Vec<String> {
        Vec::new()
    }
}

impl TopView {
    /// Writes a sample as tables: the summary, a blank line, the rows, then one line per
    /// unreachable replica with its error.
    ///
    /// # Errors
    /// Fails only when writing fails.
    pub(crate) fn write_tables(
        &self,
        wide: bool,
        opts: output::Options,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        output::render_table(&Summary(self), false, opts, out)?;
        writeln!(out)?;
        output::render_table(self, wide, opts, out)?;
        for u in &self.unreachable {
            writeln!(out, "{} unreachable: {}", u.apiserver, u.error)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::peers::Unreachable;
    use super::super::top::{ApiserverTop, InFlight, RequestRow};
    use super::*;
    use crate::output::{render, Format, Options};

    fn row(verb: &str, group: &str, resource: &str, sub: &str, rate: f64) -> RequestRow {
        RequestRow {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            requests_per_second: rate,
            client_errors_per_second: 0.5,
            server_errors_per_second: 0.0,
            p50_seconds: Some(0.0025),
            p90_seconds: Some(0.0045),
            p99_seconds: Some(0.2475),
        }
    }

    fn view(multi: bool) -> TopView {
        let mut slow = row("PUT", "apps", "deployments", "status", 123.4);
        slow.server_errors_per_second = 1.5;
        slow.p50_seconds = Some(0.000_4);
        slow.p99_seconds = Some(60.0);
        slow.p90_seconds = None;
        TopView {
            time: chrono::DateTime::from_timestamp(1_767_322_800, 0).unwrap(),
            apiservers: vec![ApiserverTop {
                apiserver: "https://127.0.0.1:6443".into(),
                identity: None,
                interval_seconds: 2.0,
                in_flight: InFlight {
                    read_only: Some(3),
                    mutating: Some(0),
                },
                long_running: None,
                resident_memory_bytes: Some(52 << 20),
                cpu_percent: Some(12.345),
                requests_per_second: 135.9,
                server_errors_per_second: 1.5,
                requests: vec![slow, row("LIST", "", "configmaps", "", 12.5)],
            }],
            unreachable: vec![],
            multi_server: multi,
        }
    }

    fn tables(v: &TopView, wide: bool) -> String {
        let mut out = Vec::new();
        v.write_tables(wide, Options::default(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn summary_and_rows() {
        assert_eq!(
            tables(&view(false), false),
            "APISERVER                INFLIGHT-RO   INFLIGHT-MUT   LONGRUNNING   RSS    CPU     REQ/S   5XX/S\n\
             https://127.0.0.1:6443   3             0              -             52Mi   12.3%   136     1.50\n\
             \n\
             VERB   RESOURCE                  REQ/S   5XX/S   P50      P99\n\
             PUT    deployments.apps/status   123     1.50    400µs    60.0s\n\
             LIST   configmaps                12.5    0       2.50ms   248ms\n"
        );
    }

    #[test]
    fn wide_and_multi_server() {
        let wide = tables(&view(false), true);
        assert!(
            wide.contains(
                "VERB   RESOURCE                  REQ/S   5XX/S   P50      P99     4XX/S   P90      APISERVER\n\
                 PUT    deployments.apps/status   123     1.50    400µs    60.0s   0.50    -        https://127.0.0.1:6443\n"
            ),
            "{wide}"
        );
        let mut v = view(true);
        v.unreachable.push(Unreachable {
            apiserver: "https://127.0.0.1:6444".into(),
            identity: Some("apiserver-b".into()),
            error: "cannot reach it".into(),
        });
        let multi = tables(&v, false);
        assert!(
            multi.contains("\nAPISERVER                VERB   RESOURCE "),
            "{multi}"
        );
        assert!(
            multi.contains("https://127.0.0.1:6443   LIST   configmaps"),
            "{multi}"
        );
        assert!(
            multi.contains("\nhttps://127.0.0.1:6444   unreachable\n"),
            "{multi}"
        );
        assert!(
            multi.ends_with("https://127.0.0.1:6444 unreachable: cannot reach it\n"),
            "{multi}"
        );
    }

    #[test]
    fn json_shape() {
        let mut out = Vec::new();
        render(&view(false), Format::Json, Options::default(), &mut out).unwrap();
        let got: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(got["time"], "2026-01-02T03:00:00Z");
        let a = &got["apiservers"][0];
        assert_eq!(
            a.as_object().unwrap().keys().collect::<Vec<_>>(),
            [
                "apiserver",
                "identity",
                "intervalSeconds",
                "inFlight",
                "longRunning",
                "residentMemoryBytes",
                "cpuPercent",
                "requestsPerSecond",
                "serverErrorsPerSecond",
                "requests"
            ]
        );
        assert_eq!(
            a["inFlight"],
            serde_json::json!({"readOnly": 3, "mutating": 0})
        );
        assert_eq!(a["longRunning"], serde_json::Value::Null);
        assert_eq!(
            a["requests"][1],
            serde_json::json!({
                "verb": "LIST", "group": "", "resource": "configmaps", "subresource": "",
                "requestsPerSecond": 12.5, "clientErrorsPerSecond": 0.5,
                "serverErrorsPerSecond": 0.0, "p50Seconds": 0.0025, "p90Seconds": 0.0045,
                "p99Seconds": 0.2475
            })
        );
        assert_eq!(got["unreachable"], serde_json::json!([]));
    }

    #[test]
    fn names_and_formats() {
        assert_eq!(resource_name("", "pods", "log"), "pods/log");
        assert_eq!(resource_name("apps", "deployments", ""), "deployments.apps");
        assert_eq!(resource_name("", "", "/healthz"), "/healthz");
        assert_eq!(resource_name("", "", ""), "-");
        assert_eq!(latency(Some(0.012_34)), "12.3ms");
        assert_eq!(latency(Some(1.5)), "1.50s");
        assert_eq!(bytes(Some(512)), "512");
        assert_eq!(bytes(Some(3 << 30)), "3Gi");
        assert_eq!(rate(0.333_3), "0.33");
    }
}
