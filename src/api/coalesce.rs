//! Write coalescing under TLS: a connection's encrypted bytes are collected until the
//! connection flushes, and the first flush of a batch yields once to the runtime before the
//! bytes go to the socket.
//!
//! With HTTP/2, responses finish one by one (each stream is its own task) and the connection
//! flushes after each, so at concurrency 64 every response cost a `writev` of its own (and, on
//! loopback, the peer's receive processing inside that call). Yielding once lets the other
//! streams that are ready finish first; their frames join the same write. Nothing waits for a
//! timer: an idle runtime polls the connection again at once, so a lone response is written
//! right away. Large writes (LIST pages, watch bursts) go out when the buffer reaches
//! [`LIMIT`], without waiting for a flush.
//!
//! The proxy's HTTP/2 connections to a backend do the same for requests: the handlers that
//! forward at the same moment share a write.
//! May use: nothing internal.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Buffered bytes above which a write goes to the socket without waiting for a flush.
const LIMIT: usize = 64 * 1024;

/// A stream whose writes are held until a flush (see the module doc).
#[derive(Debug)]
pub(crate) struct Coalescing<S> {
    inner: S,
    buf: Vec<u8>,
    /// Whether this batch's flush already yielded once.
    yielded: bool,
}

impl<S> Coalescing<S> {
    pub(crate) fn new(inner: S) -> Self {
        Coalescing {
            inner,
            buf: Vec::new(),
            yielded: false,
        }
    }
}

impl<S: AsyncWrite + Unpin> Coalescing<S> {
    /// Writes out everything buffered.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.buf.is_empty() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.buf))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.buf.drain(..n);
        }
        if self.buf.capacity() > LIMIT {
            // A burst (a large LIST page) is not kept as memory of an idle connection.
            self.buf = Vec::new();
        }
        self.yielded = false;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Coalescing<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Coalescing<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.buf.len() >= LIMIT {
            ready!(self.poll_drain(cx))?;
        }
        self.buf.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.buf.len() >= LIMIT {
            ready!(self.poll_drain(cx))?;
        }
        let mut n = 0;
        for b in bufs {
            if n > 0 && self.buf.len() >= LIMIT {
                break;
            }
            self.buf.extend_from_slice(b);
            n += b.len();
        }
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.buf.is_empty() && !self.yielded {
            // Back of the run queue: the streams that are ready add their frames first.
            self.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Bytes the peer can read without waiting.
    async fn available(peer: &mut tokio::io::DuplexStream) -> Vec<u8> {
        let mut out = vec![0; 1 << 20];
        let mut buf = ReadBuf::new(&mut out);
        let _ = poll_fn(|cx| match Pin::new(&mut *peer).poll_read(cx, &mut buf) {
            Poll::Pending => Poll::Ready(()),
            Poll::Ready(r) => {
                r.unwrap();
                Poll::Ready(())
            }
        })
        .await;
        buf.filled().to_vec()
    }

    #[tokio::test]
    async fn writes_wait_for_the_flush_which_yields_once() {
        let (ours, mut peer) = tokio::io::duplex(1 << 20);
        let mut s = Coalescing::new(ours);
        s.write_all(b"first ").await.unwrap();
        s.write_all(b"second").await.unwrap();
        assert!(
            available(&mut peer).await.is_empty(),
            "nothing before a flush"
        );

        // The first poll of a flush yields (and asks to be polled again) ...
        let woken = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let waker = waker_fn(woken.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut s).poll_flush(&mut cx).is_pending());
        assert!(woken.load(std::sync::atomic::Ordering::SeqCst));
        // ... and what was written meanwhile joins the same write.
        s.write_all(b" third").await.unwrap();
        assert!(Pin::new(&mut s).poll_flush(&mut cx).is_ready());
        assert_eq!(available(&mut peer).await, b"first second third");

        // A flush with nothing buffered completes at once.
        assert!(Pin::new(&mut s).poll_flush(&mut cx).is_ready());
    }

    #[tokio::test]
    async fn large_writes_go_out_without_a_flush_and_shutdown_drains() {
        let (ours, mut peer) = tokio::io::duplex(4 << 20);
        let mut s = Coalescing::new(ours);
        let big = vec![7u8; LIMIT + 10];
        s.write_all(&big).await.unwrap();
        s.write_all(b"tail").await.unwrap();
        assert_eq!(available(&mut peer).await.len(), LIMIT + 10);
        assert!(s.buf.capacity() <= LIMIT, "the burst's buffer was let go");
        s.shutdown().await.unwrap();
        let mut rest = Vec::new();
        peer.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"tail");
    }

    #[tokio::test]
    async fn reads_pass_through() {
        let (ours, mut peer) = tokio::io::duplex(1024);
        let mut s = Coalescing::new(ours);
        peer.write_all(b"request").await.unwrap();
        let mut got = [0u8; 7];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"request");
    }

    fn waker_fn(flag: std::sync::Arc<std::sync::atomic::AtomicBool>) -> std::task::Waker {
        struct Flag(std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl std::task::Wake for Flag {
            fn wake(self: std::sync::Arc<Self>) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        std::task::Waker::from(std::sync::Arc::new(Flag(flag)))
    }
}
