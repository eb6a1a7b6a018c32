//! `kapi` run on a fresh pseudo-terminal, as a person at a terminal runs it: the
//! `--wait` spinner and `kapi top`'s redrawn screen are tested through it.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::Instant;

use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};

/// A running `kapi` on a pseudo-terminal of `rows` × `cols`.
pub(crate) struct Pty {
    pub(crate) child: Box<dyn Child + Send + Sync>,
    /// What the terminal shows, in pieces, with when each arrived; disconnected once the
    /// program has exited and all of it was read.
    pub(crate) output: mpsc::Receiver<(Instant, Vec<u8>)>,
    /// Held so the terminal stays open until the run is dropped.
    master: Box<dyn MasterPty + Send>,
    /// Taken on first use only: dropping it ends the terminal's input.
    writer: Option<Box<dyn std::io::Write + Send>>,
}

impl Pty {
    /// Types `keys` into the terminal (`b"\x03"`: Ctrl-C).
    pub(crate) fn type_keys(&mut self, keys: &[u8]) {
        if self.writer.is_none() {
            self.writer = Some(self.master.take_writer().expect("pty writer"));
        }
        if let Some(w) = &mut self.writer {
            w.write_all(keys).expect("type into the pty");
            w.flush().expect("type into the pty");
        }
    }
}

/// Starts `kapi <args>` with stdin, stdout and stderr on a fresh pseudo-terminal
/// (TERM=xterm-256color, colours allowed, `kubeconfig` in KUBECONFIG).
pub(crate) fn spawn(kubeconfig: &Path, args: &[&str], rows: u16, cols: u16) -> Pty {
    let pair = native_pty_system()
        .openpty(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("open a pseudo-terminal");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_kapi"));
    cmd.args(args);
    cmd.env("KUBECONFIG", kubeconfig);
    cmd.env("TERM", "xterm-256color");
    cmd.env_remove("NO_COLOR");
    cmd.cwd(std::env::temp_dir());
    let child = pair
        .slave
        .spawn_command(cmd)
        .expect("spawn kapi on the pty");
    // Only the child holds the terminal's slave side now: its exit ends the reader below.
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().expect("pty reader");
    let (tx, output) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // Linux answers EIO once the slave side is closed: that is the end of the output.
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                break;
            }
        }
    });
    Pty {
        child,
        output,
        master: pair.master,
        writer: None,
    }
}
