//! A single-member etcd 3.5 (the `etcd` on PATH, installed by scripts/test.sh) on free loopback
//! ports in a temp dir, for the tests that run kapi on a real etcd.

use super::within;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A single-member etcd in a temp dir, killed on drop.
pub(crate) struct Etcd {
    child: Child,
    /// Client URL, e.g. `http://127.0.0.1:23790`.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port that was free a moment ago.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts etcd and waits until it accepts connections; panics when etcd is not on PATH.
pub(crate) async fn start_etcd() -> Etcd {
    let dir = tempfile::tempdir().unwrap();
    let (client_port, peer_port) = (free_port(), free_port());
    let url = format!("http://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    let child = Command::new("etcd")
        .args(["--name", "default", "--data-dir"])
        .arg(dir.path().join("etcd"))
        .args([
            "--listen-client-urls",
            &url,
            "--advertise-client-urls",
            &url,
        ])
        .args([
            "--listen-peer-urls",
            &peer,
            "--initial-advertise-peer-urls",
            &peer,
        ])
        .args(["--initial-cluster", &format!("default={peer}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("etcd must be on PATH (scripts/test.sh installs it)");
    let addr = format!("127.0.0.1:{client_port}");
    within(Duration::from_secs(30), "etcd to listen", async {
        while tokio::net::TcpStream::connect(&addr).await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    Etcd {
        child,
        url,
        _dir: dir,
    }
}
