//! An HTTP/2 connection that encodes its requests' headers as Go's HPACK encoder does (the
//! one in kubectl and client-go): every field that fits in the dynamic table is indexed,
//! `Authorization` included. The `h2` crate (hyper's and reqwest's HTTP/2) and nghttp2 never
//! index `Authorization`, so a bearer token crosses each request again and the server
//! Huffman-decodes it every time; a Go client sends it once per connection and then a
//! one-byte reference. No Rust HTTP/2 client encodes as Go does, so this one writes its
//! frames itself (RFC 9113: preface, SETTINGS, HEADERS, WINDOW_UPDATE, PING and SETTINGS
//! acknowledgements) over rustls, with the `httlib-hpack` encoder set as Go's (index every
//! field, Huffman-code a literal when that is shorter) and its decoder for responses.
//!
//! It serves one purpose: the same GET (one path, one credential) many times over a
//! connection, from several tasks at once, each request a new stream.

use super::Res;
use bytes::{Buf, BufMut, BytesMut};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// Both flow-control windows, as the h2 loader's (h2load's `-w 30 -W 30`).
const WINDOW: u32 = (1 << 30) - 1;

/// A finished response's status, or why the stream failed.
type Reply = oneshot::Sender<Result<u16, String>>;

/// Streams waiting for their response: status once its HEADERS arrived, and where to reply.
type Pending = Arc<Mutex<HashMap<u32, (u16, Reply)>>>;

/// A handle on one connection; clones share it as separate streams.
#[derive(Clone)]
pub(crate) struct Conn {
    requests: mpsc::UnboundedSender<Out>,
}

enum Out {
    Request(Reply),
    Frame(Vec<u8>),
}

impl Conn {
    /// GETs the connection's path; the response's status once its last frame arrived.
    pub(crate) async fn get(&self) -> Res<u16> {
        let (tx, rx) = oneshot::channel();
        self.requests
            .send(Out::Request(tx))
            .map_err(|_| "connection closed")?;
        Ok(rx.await.map_err(|_| "connection closed")??)
    }
}

/// Opens a connection to `host:port` whose requests GET `path` with `authorization` (if any).
pub(crate) async fn connect(
    tls: Arc<rustls::ClientConfig>,
    host: &str,
    port: u16,
    path: &str,
    authorization: Option<&[u8]>,
) -> Res<Conn> {
    let stream = super::loader::tls_h2(tls, host, port).await?;
    let (mut read, mut write) = tokio::io::split(stream);
    let mut start = PREFACE.to_vec();
    // SETTINGS: ENABLE_PUSH 0, INITIAL_WINDOW_SIZE; then the connection's window.
    let mut settings = Vec::new();
    settings.put_u16(0x2);
    settings.put_u32(0);
    settings.put_u16(0x4);
    settings.put_u32(WINDOW);
    frame(&mut start, SETTINGS, 0, 0, &settings);
    frame(
        &mut start,
        WINDOW_UPDATE,
        0,
        0,
        &(WINDOW - 65_535).to_be_bytes(),
    );
    write.write_all(&start).await?;
    write.flush().await?;

    let fields = request_fields(host, port, path, authorization);
    let pending: Pending = Arc::default();
    let (requests, mut outgoing) = mpsc::unbounded_channel::<Out>();
    let control = requests.clone();
    let writer_pending = pending.clone();
    tokio::spawn(async move {
        let mut next_id = 1u32;
        let mut buf = Vec::with_capacity(16 * 1024);
        let (mut encoder, mut block) = (httlib_hpack::Encoder::default(), Vec::new());
        while let Some(out) = outgoing.recv().await {
            let mut out = Some(out);
            // Everything already queued goes out in one write.
            while let Some(o) = out.take().or_else(|| outgoing.try_recv().ok()) {
                match o {
                    Out::Frame(f) => buf.extend_from_slice(&f),
                    Out::Request(reply) => {
                        block.clear();
                        for (name, value) in &fields {
                            // As Go's encoder: indexed when the table has the field, else a
                            // literal added to the table.
                            let flags = httlib_hpack::Encoder::BEST_FORMAT
                                | httlib_hpack::Encoder::WITH_INDEXING
                                | httlib_hpack::Encoder::HUFFMAN_VALUE;
                            let field = (name.clone(), value.clone(), flags);
                            if encoder.encode(field, &mut block).is_err() {
                                return;
                            }
                        }
                        frame(&mut buf, HEADERS, END_STREAM | END_HEADERS, next_id, &block);
                        if let Ok(mut p) = writer_pending.lock() {
                            p.insert(next_id, (0, reply));
                        }
                        next_id += 2;
                    }
                }
            }
            if write.write_all(&buf).await.is_err() || write.flush().await.is_err() {
                break;
            }
            buf.clear();
        }
    });
    tokio::spawn(async move {
        let err = read_frames(&mut read, &pending, &control)
            .await
            .err()
            .map_or_else(|| "connection closed".to_string(), |e| e.to_string());
        if let Ok(mut p) = pending.lock() {
            for (_, (_, reply)) in p.drain() {
                let _ = reply.send(Err(err.clone()));
            }
        }
    });
    Ok(Conn { requests })
}

/// Reads frames until the connection ends: completes streams, acknowledges SETTINGS and
/// PING, and gives the connection's window back as responses consume it.
async fn read_frames<R: tokio::io::AsyncRead + Unpin>(
    read: &mut R,
    pending: &Pending,
    control: &mpsc::UnboundedSender<Out>,
) -> Res<()> {
    let mut read = tokio::io::BufReader::with_capacity(64 * 1024, read);
    let mut decoder = httlib_hpack::Decoder::default();
    let mut fields = Vec::new();
    let (mut block, mut block_stream, mut block_end) = (Vec::new(), 0u32, false);
    let mut consumed = 0u32;
    let mut head = [0u8; 9];
    let mut payload = BytesMut::new();
    loop {
        read.read_exact(&mut head).await?;
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        payload.resize(len, 0);
        read.read_exact(&mut payload).await?;
        let mut body = &payload[..];
        match kind {
            DATA => {
                consumed += len as u32;
                if consumed > WINDOW / 2 {
                    let mut f = Vec::new();
                    frame(&mut f, WINDOW_UPDATE, 0, 0, &consumed.to_be_bytes());
                    let _ = control.send(Out::Frame(f));
                    consumed = 0;
                }
                if flags & END_STREAM != 0 {
                    finish(pending, stream, None);
                }
            }
            HEADERS | CONTINUATION => {
                if kind == HEADERS {
                    if flags & PADDED != 0 {
                        let pad = body.get_u8() as usize;
                        body = &body[..body.len().saturating_sub(pad)];
                    }
                    if flags & PRIORITY != 0 {
                        body.advance(5);
                    }
                    block.clear();
                    block_stream = stream;
                    block_end = flags & END_STREAM != 0;
                }
                block.extend_from_slice(body);
                if flags & END_HEADERS != 0 {
                    // Decoded even when the status is known, to keep the table in step.
                    fields.clear();
                    decoder
                        .decode(&mut block, &mut fields)
                        .map_err(|e| format!("HPACK: {e:?}"))?;
                    let status = fields
                        .iter()
                        .find(|(n, _, _)| n == b":status")
                        .and_then(|(_, v, _)| std::str::from_utf8(v).ok()?.parse().ok());
                    if let (Some(status), Ok(mut p)) = (status, pending.lock()) {
                        if let Some(entry) = p.get_mut(&block_stream) {
                            entry.0 = status;
                        }
                    }
                    if block_end {
                        finish(pending, block_stream, None);
                    }
                }
            }
            RST_STREAM => finish(pending, stream, Some("stream reset by the server")),
            SETTINGS if flags & ACK == 0 => {
                let mut f = Vec::new();
                frame(&mut f, SETTINGS, ACK, 0, &[]);
                let _ = control.send(Out::Frame(f));
            }
            PING if flags & ACK == 0 => {
                let mut f = Vec::new();
                frame(&mut f, PING, ACK, 0, body);
                let _ = control.send(Out::Frame(f));
            }
            GOAWAY => return Err("GOAWAY from the server".into()),
            _ => {}
        }
    }
}

/// Replies to `stream`'s waiter: its status, or `error`.
fn finish(pending: &Pending, stream: u32, error: Option<&str>) {
    let entry = pending.lock().ok().and_then(|mut p| p.remove(&stream));
    if let Some((status, reply)) = entry {
        let _ = reply.send(match error {
            Some(e) => Err(e.to_string()),
            None => Ok(status),
        });
    }
}

/// A request's header fields, in Go's order.
fn request_fields(
    host: &str,
    port: u16,
    path: &str,
    authorization: Option<&[u8]>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut fields = vec![
        (
            b":authority".to_vec(),
            format!("{host}:{port}").into_bytes(),
        ),
        (b":method".to_vec(), b"GET".to_vec()),
        (b":path".to_vec(), path.as_bytes().to_vec()),
        (b":scheme".to_vec(), b"https".to_vec()),
        (b"accept".to_vec(), b"application/json".to_vec()),
    ];
    if let Some(auth) = authorization {
        fields.push((b"authorization".to_vec(), auth.to_vec()));
    }
    fields.push((b"user-agent".to_vec(), b"kapi-bench (Go's HPACK)".to_vec()));
    fields
}

/// Appends one frame.
fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}
