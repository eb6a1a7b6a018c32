//! A real etcd for the benchmark: the `etcd` binary on PATH on free loopback ports, with a
//! temporary data directory, stopped when dropped.

use super::*;

pub(crate) struct Etcd {
    pub(crate) child: Child,
    pub(crate) url: String,
    pub(crate) _dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

pub(crate) async fn start_etcd() -> Option<Etcd> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let bin = std::env::split_paths(&path)
        .map(|d| d.join("etcd"))
        .find(|p| p.is_file())?;
    let dir = tempfile::tempdir().expect("tempdir");
    let (c, p) = (port(), port());
    let url = format!("http://127.0.0.1:{c}");
    let peer = format!("http://127.0.0.1:{p}");
    let child = Command::new(bin)
        .args([
            "--name=bench".to_string(),
            format!("--data-dir={}", dir.path().join("etcd").display()),
            format!("--listen-client-urls={url}"),
            format!("--advertise-client-urls={url}"),
            format!("--listen-peer-urls={peer}"),
            format!("--initial-advertise-peer-urls={peer}"),
            format!("--initial-cluster=bench={peer}"),
            "--log-level=error".to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    ETCD_PID.store(child.id(), std::sync::atomic::Ordering::Relaxed);
    let etcd = Etcd {
        child,
        url,
        _dir: dir,
    };
    for _ in 0..200 {
        if let Ok(mut c) = etcd_client::Client::connect([etcd.url.as_str()], None).await {
            if c.get("health", None).await.is_ok() {
                return Some(etcd);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}
