//! Supervised post-start hooks: a failing hook keeps its readyz check red while the server
//! stays up, and turns green once it succeeds.

use crate::support::{get_text, within, Options, TestServer};
use std::time::Duration;

#[tokio::test]
async fn failing_hook_shows_red_then_green() {
    // Five failures with backoff 100ms, 200ms, 400ms, 800ms, 1.6s: about 3s of red.
    let mut server = TestServer::start_with(
        Options::default()
            .args(["--debug-failing-hook", "flaky=5"])
            .wait_for("/livez/ping")
            .probe_as_admin(),
    )
    .await;
    // As the admin: a check's own path is not public, and anonymous /readyz is allowed
    // only once the bootstrap policy exists.
    let anon = server.admin_http();
    let (code, body) = get_text(&anon, &server.url("/readyz")).await;
    assert_eq!(
        code,
        500,
        "{body} after {:?}\n{}",
        server.ready_after,
        server.stderr()
    );
    assert!(
        body.contains("[-]poststarthook/flaky failed: reason withheld\n"),
        "{body}"
    );
    assert!(body.ends_with("readyz check failed\n"), "{body}");
    let (code, body) = get_text(&anon, &server.url("/readyz/poststarthook/flaky")).await;
    assert_eq!(code, 500);
    assert!(
        body == "internal server error: not finished\n"
            || body.starts_with("internal server error: failing on purpose (attempt "),
        "{body}"
    );

    within(Duration::from_secs(30), "hook to succeed", async {
        loop {
            if get_text(&anon, &server.url("/readyz")).await.0 == 200 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let (code, body) = get_text(&anon, &server.url("/readyz?verbose")).await;
    assert_eq!(code, 200);
    assert!(body.contains("[+]poststarthook/flaky ok\n"), "{body}");
    assert!(server.is_running());
    assert!(
        server.stderr().contains("post-start hook failed"),
        "{}",
        server.stderr()
    );
}
