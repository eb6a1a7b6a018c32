//! The runtime the control plane's own work runs on: the post-start hooks (the in-process
//! controllers) and the loopback client they reach this server with.
//!
//! kube-apiserver exempts its loopback traffic from max-in-flight (kapi does too: the loopback
//! user is in `system:masters`) and from priority and fairness queueing. kapi also keeps that
//! work off the runtime that serves clients: its tasks run on a thread of their own, so
//! however many client tasks are queued (thousands of watch streams, a flood of writes), the
//! OS scheduler gives the controllers their share of the CPU at once, and identity-lease
//! renewals and leader election keep their deadlines. The loopback requests themselves run on
//! this runtime too: the handler chain is called in process, in the controller's own task.
//! May use: nothing internal.

use tokio::runtime::{Builder, Handle, Runtime};

/// A one-thread runtime for the control plane's own tasks; shut down (without waiting) when
/// dropped, after the server has stopped its hooks.
pub(crate) struct ControlRuntime {
    rt: Option<Runtime>,
}

impl ControlRuntime {
    /// Starts the runtime's thread.
    pub(crate) fn start() -> std::io::Result<ControlRuntime> {
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("kapi-control")
            .enable_all()
            .build()?;
        Ok(ControlRuntime { rt: Some(rt) })
    }

    /// Where to spawn control-plane tasks.
    pub(crate) fn handle(&self) -> Handle {
        match &self.rt {
            Some(rt) => rt.handle().clone(),
            // Only `drop` takes the runtime out.
            None => Handle::current(),
        }
    }
}

impl Drop for ControlRuntime {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which is not allowed inside the server's own runtime;
        // its tasks have been stopped (or given up on) by then.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn control_tasks_keep_their_timing_while_the_server_runtime_is_busy() {
        let control = ControlRuntime::start().unwrap();
        // Hog the server's only worker with tasks that never yield for 50 ms at a time.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for _ in 0..4 {
            let stop = stop.clone();
            tokio::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(50));
                    tokio::task::yield_now().await;
                }
            });
        }
        // A 10 ms tick on the control runtime still fires on time.
        let late = control
            .handle()
            .spawn(async {
                let mut worst = Duration::ZERO;
                for _ in 0..20 {
                    let start = Instant::now();
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    worst = worst.max(start.elapsed());
                }
                worst
            })
            .await
            .unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(late < Duration::from_millis(45), "worst tick {late:?}");
    }
}
