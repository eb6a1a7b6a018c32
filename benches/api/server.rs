//! The `kapi serve` process the API bench measures: spawn it on a temp data dir, wait for
//! `/readyz`, read the admin kubeconfig it writes, stop it with SIGTERM; and the /proc
//! readings (CPU time, RSS) the bench reports.

use super::Res;
use base64::Engine;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Linux reports process times in USER_HZ, which is 100 on every mainstream architecture.
const CLOCK_TICKS: f64 = 100.0;

/// A running `kapi serve` process with what the bench needs to talk to it.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) url: String,
    pub(crate) ca_pem: String,
    pub(crate) admin_pem: String,
    stderr: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Spawn → first `/readyz` 200.
    pub(crate) ready_after: Duration,
}

impl Server {
    /// Spawns `kapi serve` on `data_dir` and waits (at most 60 s) for `/readyz` 200.
    pub(crate) async fn start(data_dir: &Path) -> Res<Server> {
        Server::start_with(data_dir, &[]).await
    }

    /// [`Server::start`] with more `kapi serve` flags (after `KAPI_BENCH_SERVE_ARGS`).
    pub(crate) async fn start_with(data_dir: &Path, args: &[&str]) -> Res<Server> {
        Server::start_with_env(data_dir, args, &[]).await
    }

    /// [`Server::start_with`] with more environment variables for the server.
    pub(crate) async fn start_with_env(
        data_dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Res<Server> {
        let started = Instant::now();
        let mut child = Command::new(kapi_binary())
            .envs(env.iter().copied())
            .args([
                "serve",
                "--bind-address",
                "127.0.0.1",
                "--secure-port",
                "0",
                "--data-dir",
            ])
            .arg(data_dir)
            .args(extra_serve_args())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", kapi_binary().display()))?;
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel::<PathBuf>();
        let pipe = child.stderr.take().ok_or("no stderr pipe")?;
        let lines = stderr.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(path) = line.strip_prefix("export KUBECONFIG=") {
                    let _ = tx.send(PathBuf::from(path));
                }
                if let Ok(mut l) = lines.lock() {
                    l.push(line);
                }
            }
        });
        let deadline = started + Duration::from_secs(60);
        let kubeconfig = loop {
            if let Ok(path) = rx.try_recv() {
                break path;
            }
            if child.try_wait()?.is_some() || Instant::now() > deadline {
                let _ = child.kill();
                return Err(format!(
                    "kapi serve did not start:\n{}",
                    stderr.lock().map(|l| l.join("\n")).unwrap_or_default()
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        let (url, ca_pem, admin_pem) = read_kubeconfig(&kubeconfig)?;
        let mut server = Server {
            child,
            url,
            ca_pem,
            admin_pem,
            stderr,
            ready_after: Duration::ZERO,
        };
        let anon = server.client(false)?;
        loop {
            if let Ok(resp) = anon.get(format!("{}/readyz", server.url)).send().await {
                if resp.status() == 200 {
                    break;
                }
            }
            if server.child.try_wait()?.is_some() || Instant::now() > deadline {
                let _ = server.child.kill();
                return Err(
                    format!("kapi serve never became ready:\n{}", server.stderr_text()).into(),
                );
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        server.ready_after = started.elapsed();
        Ok(server)
    }

    pub(crate) fn stderr_text(&self) -> String {
        self.stderr.lock().map(|l| l.join("\n")).unwrap_or_default()
    }

    /// An HTTP/2-only TLS client (one connection), with the admin certificate or anonymous.
    pub(crate) fn client(&self, admin: bool) -> Res<reqwest::Client> {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(self.ca_pem.as_bytes())?)
            .http2_prior_knowledge()
            .timeout(Duration::from_secs(30));
        if admin {
            builder = builder.identity(reqwest::Identity::from_pem(self.admin_pem.as_bytes())?);
        }
        Ok(builder.build()?)
    }

    /// SIGTERM, then wait (at most 20 s, then SIGKILL) for the exit.
    pub(crate) async fn stop(mut self) -> Res<()> {
        Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err("kapi serve did not exit within 20 s of SIGTERM".into());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Server URL, CA PEM and admin cert + key PEM from the admin kubeconfig.
fn read_kubeconfig(path: &Path) -> Res<(String, String, String)> {
    let doc: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(path)?)?;
    let b64 = |v: &serde_yaml::Value| -> Res<String> {
        let text = v.as_str().ok_or("kubeconfig: missing data field")?;
        Ok(String::from_utf8(
            base64::engine::general_purpose::STANDARD.decode(text)?,
        )?)
    };
    let cluster = &doc["clusters"][0]["cluster"];
    let url = cluster["server"]
        .as_str()
        .ok_or("kubeconfig: no server")?
        .to_string();
    let user = &doc["users"][0]["user"];
    let admin = format!(
        "{}{}",
        b64(&user["client-certificate-data"])?,
        b64(&user["client-key-data"])?
    );
    Ok((url, b64(&cluster["certificate-authority-data"])?, admin))
}

/// The `kapi` binary to measure: `KAPI_BENCH_BIN` if set (to compare two builds in one
/// session), else the one cargo built for this bench.
pub(crate) fn kapi_binary() -> PathBuf {
    std::env::var_os("KAPI_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kapi")))
}

/// Extra `kapi serve` flags from `KAPI_BENCH_SERVE_ARGS` (split on whitespace), e.g. to
/// measure with a feature gate off.
fn extra_serve_args() -> Vec<String> {
    std::env::var("KAPI_BENCH_SERVE_ARGS")
        .map(|a| a.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// Process utime + stime in seconds, from /proc/<pid>/stat.
pub(crate) fn cpu_seconds(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return f64::NAN;
    };
    // Fields after the ")" that ends the command name: state is field 3; utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (ticks(11) + ticks(12)) / CLOCK_TICKS
}

/// VmRSS of a process in MiB.
pub(crate) fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}
