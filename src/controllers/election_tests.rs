//! Unit tests of the coordinated-leader-election decisions.

use super::*;
use k8s_openapi::api::coordination::v1beta1::LeaseCandidateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).unwrap()
}

fn cand(name: &str, emu: &str, bin: &str, created: i64) -> LeaseCandidate {
    LeaseCandidate {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("kube-system".into()),
            creation_timestamp: Some(Time(at(created))),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseCandidateSpec {
            lease_name: "kube-scheduler".into(),
            binary_version: bin.into(),
            emulation_version: Some(emu.into()),
            strategy: OLDEST_EMULATION_VERSION.into(),
            renew_time: Some(MicroTime(at(0))),
            ping_time: None,
        }),
    }
}

fn lease(holder: Option<&str>, renew: i64, dur: i32) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some("kube-scheduler".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: holder.map(str::to_string),
            renew_time: Some(MicroTime(at(renew))),
            lease_duration_seconds: Some(dur),
            strategy: Some(OLDEST_EMULATION_VERSION.into()),
            ..LeaseSpec::default()
        }),
    }
}

#[test]
fn tolerant_versions() {
    assert_eq!(parse_version("v1.31"), Some(semver::Version::new(1, 31, 0)));
    assert_eq!(
        parse_version(" 1.32.1 "),
        Some(semver::Version::new(1, 32, 1))
    );
    assert_eq!(parse_version("2"), Some(semver::Version::new(2, 0, 0)));
    assert!(parse_version("1.33.0-alpha.1").is_some());
    assert!(parse_version("1.33-rc.1").is_some());
    assert_eq!(parse_version("banana"), None);
    assert_eq!(parse_version(""), None);
}

#[test]
fn oldest_emulation_version_wins() {
    let cs = vec![
        cand("new", "1.33.0", "1.33.0", 0),
        cand("old", "1.32.0", "1.33.0", 10),
        cand("older-binary", "1.32.0", "1.32.5", 20),
    ];
    assert_eq!(best_candidate(&cs).unwrap().name_any(), "older-binary");
    let cs = vec![
        cand("b", "1.32.0", "1.33.0", 5),
        cand("a", "1.32.0", "1.33.0", 1),
    ];
    assert_eq!(
        best_candidate(&cs).unwrap().name_any(),
        "a",
        "oldest creation wins a tie"
    );
    let cs = vec![
        cand("bad", "x.y", "1.30.0", 0),
        cand("good", "1.34.0", "1.34.0", 9),
    ];
    assert_eq!(
        best_candidate(&cs).unwrap().name_any(),
        "good",
        "unparsable skipped"
    );
    let mut no_emu = cand("noemu", "1.0.0", "1.0.0", 0);
    no_emu.spec.as_mut().unwrap().emulation_version = None;
    assert!(best_candidate(&[no_emu]).is_none());
}

#[test]
fn strategy_vote() {
    let mut a = cand("a", "1.32.0", "1.33.0", 0);
    let mut b = cand("b", "1.32.0", "1.32.0", 0);
    b.spec.as_mut().unwrap().strategy = "Other".into();
    assert_eq!(
        pick_strategy(&[a.clone(), b.clone()]).unwrap().as_deref(),
        Some(OLDEST_EMULATION_VERSION),
        "the highest binary version decides"
    );
    b.spec.as_mut().unwrap().binary_version = "1.33.0".into();
    let err = pick_strategy(&[a.clone(), b]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "candidates \"a\", \"b\" at same binary version but received differing strategies OldestEmulationVersion, Other"
    );
    a.spec.as_mut().unwrap().binary_version = "junk".into();
    assert_eq!(
        pick_strategy(&[a]).unwrap().as_deref(),
        Some(OLDEST_EMULATION_VERSION)
    );
    assert_eq!(pick_strategy(&[]).unwrap(), None);
}

#[test]
fn validity_filter() {
    let now = at(0);
    let mut expired = cand("expired", "1.0.0", "1.0.0", 0);
    expired.spec.as_mut().unwrap().renew_time = Some(MicroTime(at(-31 * 60)));
    let mut other = cand("other", "1.0.0", "1.0.0", 0);
    other.spec.as_mut().unwrap().lease_name = "kube-controller-manager".into();
    let ok = cand("ok", "1.0.0", "1.0.0", 0);
    let v = valid_candidates(vec![expired, other, ok], "kube-scheduler", now);
    assert_eq!(
        v.iter().map(ResourceExt::name_any).collect::<Vec<_>>(),
        ["ok"]
    );
}

#[test]
fn when_an_election_is_needed() {
    let cs = vec![
        cand("a", "1.32.0", "1.32.0", 0),
        cand("b", "1.33.0", "1.33.0", 0),
    ];
    let now = at(10);
    assert!(election_needed(None, &cs, now).unwrap(), "no lease");
    assert!(
        election_needed(Some(&lease(Some("a"), 0, 5)), &cs, now).unwrap(),
        "expired"
    );
    assert!(
        election_needed(Some(&lease(None, 8, 5)), &cs, now).unwrap(),
        "free"
    );
    assert!(
        !election_needed(Some(&lease(Some("a"), 8, 5)), &cs, now).unwrap(),
        "best holds it"
    );
    assert!(
        election_needed(Some(&lease(Some("b"), 8, 5)), &cs, now).unwrap(),
        "worse holds it"
    );
    let mut told = lease(Some("b"), 8, 5);
    told.spec.as_mut().unwrap().preferred_holder = Some("a".into());
    assert!(
        !election_needed(Some(&told), &cs, now).unwrap(),
        "already preferred"
    );
    let mut stale_pref = lease(Some("b"), 8, 5);
    stale_pref.spec.as_mut().unwrap().preferred_holder = Some("gone".into());
    assert!(
        election_needed(Some(&stale_pref), &cs, now).unwrap(),
        "preferred holder vanished"
    );
    let mut stale = cs.clone();
    stale[1].spec.as_mut().unwrap().renew_time = Some(MicroTime(at(-16 * 60)));
    assert!(
        election_needed(Some(&lease(Some("a"), 8, 5)), &stale, now).unwrap(),
        "stale cand"
    );
}

#[test]
fn ping_states() {
    let mut c = cand("a", "1.0.0", "1.0.0", 0);
    let spec = |c: &mut LeaseCandidate| c.spec.as_mut().unwrap().clone();
    assert_eq!(ping_state(&c, at(3)), Ping::Fresh, "renewed 3s ago");
    assert_eq!(ping_state(&c, at(6)), Ping::Send, "never pinged, not fresh");
    c = pinged(c, at(6));
    assert_eq!(spec(&mut c).ping_time, Some(MicroTime(at(6))));
    assert_eq!(ping_state(&c, at(8)), Ping::Pending);
    assert_eq!(
        ping_state(&c, at(12)),
        Ping::TimedOut,
        "window over, never acked"
    );
    c.spec.as_mut().unwrap().renew_time = Some(MicroTime(at(7)));
    assert_eq!(ping_state(&c, at(8)), Ping::Fresh, "acked");
    assert_eq!(
        ping_state(&c, at(20)),
        Ping::Send,
        "old acked ping: ping again"
    );
    assert_eq!(acked(&[c.clone()], at(8)).len(), 1);
    assert!(acked(&[c], at(20)).is_empty());
}

#[test]
fn election_writes() {
    let now = at(100);
    let spec = desired_spec(OLDEST_EMULATION_VERSION, Some("a"), now);
    assert_eq!(spec.holder_identity.as_deref(), Some("a"));
    assert_eq!(spec.lease_duration_seconds, Some(5));
    assert_eq!(spec.renew_time, Some(MicroTime(now)));

    // Free lease: take it.
    let l = apply_election(
        &lease(None, 99, 5),
        OLDEST_EMULATION_VERSION,
        Some("a"),
        now,
    )
    .unwrap();
    assert_eq!(
        l.spec.as_ref().unwrap().holder_identity.as_deref(),
        Some("a")
    );
    // Expired lease held by someone else: replace the holder.
    let mut expired = lease(Some("b"), 0, 5);
    expired.spec.as_mut().unwrap().acquire_time = Some(MicroTime(at(0)));
    expired.spec.as_mut().unwrap().preferred_holder = Some("a".into());
    let l = apply_election(&expired, OLDEST_EMULATION_VERSION, Some("a"), now).unwrap();
    let s = l.spec.unwrap();
    assert_eq!(s.holder_identity.as_deref(), Some("a"));
    assert_eq!((s.acquire_time, s.preferred_holder), (None, None));
    assert_eq!(s.renew_time, Some(MicroTime(now)));
    // Live lease held by someone else: only preferredHolder, never steal.
    let live = lease(Some("b"), 99, 5);
    let l = apply_election(&live, OLDEST_EMULATION_VERSION, Some("a"), now).unwrap();
    let s = l.spec.unwrap();
    assert_eq!(s.holder_identity.as_deref(), Some("b"));
    assert_eq!(s.preferred_holder.as_deref(), Some("a"));
    assert_eq!(s.renew_time, Some(MicroTime(at(99))));
    // Already preferred: nothing to write.
    let mut told = live.clone();
    told.spec.as_mut().unwrap().preferred_holder = Some("a".into());
    assert!(apply_election(&told, OLDEST_EMULATION_VERSION, Some("a"), now).is_none());
    // Holder is the best: a leftover preference is cleared.
    let mut leftover = lease(Some("a"), 99, 5);
    leftover.spec.as_mut().unwrap().preferred_holder = Some("gone".into());
    let l = apply_election(&leftover, OLDEST_EMULATION_VERSION, Some("a"), now).unwrap();
    assert_eq!(l.spec.unwrap().preferred_holder, None);
    // Strategy changes are written.
    let mut other = lease(Some("a"), 99, 5);
    other.spec.as_mut().unwrap().strategy = None;
    assert!(apply_election(&other, OLDEST_EMULATION_VERSION, Some("a"), now).is_some());
}
