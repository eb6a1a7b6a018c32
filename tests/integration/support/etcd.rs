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

/// One member of an [`EtcdCluster`]: its process can be killed, restarted on the same data dir
/// and ports, paused and resumed.
pub(crate) struct Member {
    child: Option<Child>,
    /// `default`, `m1`, ...: the member's name.
    pub name: String,
    /// Client URL.
    pub url: String,
    args: Vec<String>,
}

impl Member {
    fn spawn(&mut self) {
        let child = Command::new("etcd")
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("etcd must be on PATH (scripts/test.sh installs it)");
        self.child = Some(child);
    }

    /// The process id, while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// kill -9, and reap.
    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the member again on its data dir (it rejoins the cluster).
    pub(crate) fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Sends SIGSTOP (`pause = true`) or SIGCONT.
    pub(crate) fn pause(&self, pause: bool) {
        let sig = if pause { libc::SIGSTOP } else { libc::SIGCONT };
        let pid = self.pid().expect("member runs");
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "kill -{sig} {pid}");
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            // A stopped process still dies of SIGKILL; SIGCONT first anyway for tidy logs.
            let _ = Command::new("kill")
                .arg("-CONT")
                .arg(pid.to_string())
                .status();
        }
        self.kill();
    }
}

/// A cluster of etcd members on loopback, each in its own dir under one temp dir.
pub(crate) struct EtcdCluster {
    /// The members, in the order of `--initial-cluster`.
    pub members: Vec<Member>,
    /// Every member's client URL, comma-separated (a `--etcd-servers` value).
    pub urls: String,
    _dir: tempfile::TempDir,
}

impl EtcdCluster {
    /// Starts `n` members and waits until the cluster has a leader.
    pub(crate) async fn start(n: usize) -> EtcdCluster {
        let dir = tempfile::tempdir().unwrap();
        let ports: Vec<(u16, u16)> = (0..n).map(|_| (free_port(), free_port())).collect();
        let initial = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut members = Vec::new();
        for (i, (client, peer)) in ports.iter().enumerate() {
            let url = format!("http://127.0.0.1:{client}");
            let peer = format!("http://127.0.0.1:{peer}");
            let data = dir.path().join(format!("m{i}"));
            let args = [
                "--name",
                &format!("m{i}"),
                "--data-dir",
                &data.display().to_string(),
                "--listen-client-urls",
                &url,
                "--advertise-client-urls",
                &url,
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
                "--initial-cluster",
                &initial,
                "--initial-cluster-state",
                "new",
                "--initial-cluster-token",
                "kapi-test",
            ]
            .map(String::from)
            .to_vec();
            let mut m = Member {
                child: None,
                name: format!("m{i}"),
                url,
                args,
            };
            m.spawn();
            members.push(m);
        }
        let urls = members
            .iter()
            .map(|m| m.url.clone())
            .collect::<Vec<_>>()
            .join(",");
        let cluster = EtcdCluster {
            members,
            urls,
            _dir: dir,
        };
        within(
            Duration::from_secs(60),
            "etcd cluster to elect a leader",
            async {
                while cluster.leader().await.is_none() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        )
        .await;
        cluster
    }

    /// Index of the current leader, asked of every running member (maintenance status);
    /// None while there is none or no member answers.
    pub(crate) async fn leader(&self) -> Option<usize> {
        for m in self.members.iter().filter(|m| m.pid().is_some()) {
            let Ok(Ok(mut c)) = tokio::time::timeout(
                Duration::from_secs(2),
                etcd_client::Client::connect([&m.url], None),
            )
            .await
            else {
                continue;
            };
            let Ok(Ok(status)) = tokio::time::timeout(Duration::from_secs(2), c.status()).await
            else {
                continue;
            };
            let leader = status.leader();
            if leader == 0 {
                continue;
            }
            let Ok(Ok(list)) = tokio::time::timeout(Duration::from_secs(2), c.member_list()).await
            else {
                continue;
            };
            let name = list
                .members()
                .iter()
                .find(|x| x.id() == leader)?
                .name()
                .to_string();
            return self.members.iter().position(|m| m.name == name);
        }
        None
    }
}
