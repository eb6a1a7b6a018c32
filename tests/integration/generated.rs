//! The committed man/ and completions/ must equal what the built binary generates from the clap
//! definition. Regenerate with `scripts/gen-docs.sh` and commit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const FIX: &str = "run scripts/gen-docs.sh and commit man/ and completions/";

fn kapi() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kapi"))
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        if e.path().is_file() {
            let name = e.file_name().to_string_lossy().into_owned();
            out.insert(name, std::fs::read(e.path()).unwrap());
        }
    }
    out
}

fn assert_same(
    area: &str,
    committed: &BTreeMap<String, Vec<u8>>,
    fresh: &BTreeMap<String, Vec<u8>>,
) {
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(committed),
        names(fresh),
        "{area}/ has a different set of files: {FIX}"
    );
    for (name, bytes) in fresh {
        assert!(
            committed[name] == *bytes,
            "{area}/{name} is out of date: {FIX}"
        );
    }
}

#[test]
fn man_pages_are_up_to_date() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kapi().arg("man").arg(tmp.path()).output().unwrap();
    assert!(
        out.status.success(),
        "kapi man failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh = files(tmp.path());
    for page in [
        "kapi.1",
        "kapi-serve.1",
        "kapi-leases.1",
        "kapi-candidates.1",
        "kapi-hooks.1",
        "kapi-health.1",
    ] {
        assert!(fresh.contains_key(page), "kapi man did not write {page}");
    }
    let leases = String::from_utf8_lossy(&fresh["kapi-leases.1"]);
    assert!(
        leases.contains("Exit codes"),
        "exit codes missing from kapi-leases.1"
    );
    assert!(
        leases.contains("peerAddress"),
        "JSON shape missing from kapi-leases.1"
    );
    assert_same("man", &files(&repo().join("man")), &fresh);
}

#[test]
fn completions_are_up_to_date() {
    let mut fresh = BTreeMap::new();
    for (shell, file) in [
        ("bash", "kapi.bash"),
        ("zsh", "_kapi"),
        ("fish", "kapi.fish"),
        ("powershell", "_kapi.ps1"),
        ("elvish", "kapi.elv"),
    ] {
        let out = kapi().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "kapi completions {shell} failed");
        assert!(
            !out.stdout.is_empty(),
            "kapi completions {shell} printed nothing"
        );
        fresh.insert(file.to_string(), out.stdout);
    }
    assert_same("completions", &files(&repo().join("completions")), &fresh);
}

#[test]
fn unknown_shell_is_a_usage_error() {
    let out = kapi().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
