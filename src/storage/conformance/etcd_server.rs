//! A real etcd for tests: the `etcd` binary found on PATH (the test script installs etcd 3.5),
//! started on free loopback ports with a temporary data directory and killed on drop. When
//! etcd is not on PATH the test fails with a message saying how to get it.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running etcd.
pub(crate) struct EtcdServer {
    child: Child,
    bin: std::path::PathBuf,
    args: Vec<String>,
    /// Client URL, `http://127.0.0.1:<port>`.
    pub url: String,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port")
}

fn find_etcd() -> std::path::PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join("etcd");
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "etcd 3.5 is not on PATH: the etcd backend tests need a real etcd. \
         Run the tests through scripts/test.sh (it installs etcd into .tools/venv/bin and puts it on PATH)."
    );
}

fn spawn(bin: &std::path::Path, args: &[String]) -> Child {
    Command::new(bin)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()))
}

impl EtcdServer {
    /// Starts etcd and waits until it answers. Ports are picked free, but another test may
    /// take one before etcd binds it: then etcd exits and is started again on new ports.
    pub(crate) async fn start() -> EtcdServer {
        for _ in 0..4 {
            if let Some(server) = Self::start_on_free_ports().await {
                return server;
            }
        }
        panic!("etcd exited at start four times (ports taken meanwhile?)");
    }

    async fn start_on_free_ports() -> Option<EtcdServer> {
        let bin = find_etcd();
        let dir = tempfile::tempdir().expect("tempdir");
        let (client, peer) = (free_port(), free_port());
        let url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let args = vec![
            "--name=test".to_string(),
            format!("--data-dir={}", dir.path().join("etcd").display()),
            format!("--listen-client-urls={url}"),
            format!("--advertise-client-urls={url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=test={peer_url}"),
            "--log-level=error".to_string(),
            "--unsafe-no-fsync".to_string(),
            "--experimental-watch-progress-notify-interval=1s".to_string(),
        ];
        let child = spawn(&bin, &args);
        let mut server = EtcdServer {
            child,
            bin,
            args,
            url,
            _dir: dir,
        };
        server.wait_ready().await.then_some(server)
    }

    /// Starts etcd again (same ports and data) after [`EtcdServer::kill`].
    pub(crate) async fn restart(&mut self) {
        self.kill();
        self.child = spawn(&self.bin, &self.args);
        assert!(self.wait_ready().await, "etcd exited at restart");
    }

    /// Waits until etcd answers: false when it exited.
    async fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            let ok = async {
                let mut c = etcd_client::Client::connect([self.url.as_str()], None)
                    .await
                    .ok()?;
                tokio::time::timeout(Duration::from_secs(1), c.get("health", None))
                    .await
                    .ok()?
                    .ok()
            }
            .await;
            if ok.is_some() {
                return true;
            }
            assert!(
                Instant::now() < deadline,
                "etcd did not become ready within 20s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops etcd (kill -9) and waits for it to exit.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
    }
}
