//! Unit tests of the label and field selector parsers.

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn parses_every_label_form() {
    let s = LabelSelector::parse("a=1, b==2,c!=3,d in (x, y),e notin (z),f,!g,h>5,i<7").unwrap();
    let ops: Vec<LabelOp> = s.requirements.iter().map(|r| r.op).collect();
    use LabelOp::*;
    assert_eq!(
        ops,
        vec![
            Equals,
            Equals,
            NotEquals,
            In,
            NotIn,
            Exists,
            DoesNotExist,
            GreaterThan,
            LessThan
        ]
    );
    let l = labels(&[
        ("a", "1"),
        ("b", "2"),
        ("d", "y"),
        ("f", ""),
        ("h", "6"),
        ("i", "6"),
    ]);
    assert!(s.matches(&l));
    assert!(!s.matches(&labels(&[("a", "1")])));
    let e = LabelSelector::parse("k in (a,,b)").unwrap();
    assert_eq!(e.requirements[0].values, vec!["a", "", "b"]);
    assert!(LabelSelector::parse("example.com/app=web,k=").is_ok());
    assert!(LabelSelector::parse("").unwrap().is_empty());
}

#[test]
fn rejects_bad_label_syntax() {
    for bad in [
        "a b", "a=(b", "k in a", "!k=v", "a=b c", "k>x", "a,", "-bad=1", "a=b$", "==a",
    ] {
        assert!(LabelSelector::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(
        LabelSelector::parse("a b").unwrap_err(),
        "found 'b', expected: '=', '!=', '==', 'in', notin'"
    );
}

#[test]
fn field_selectors() {
    let f = FieldSelector::parse("metadata.name=x,status.phase!=Active,a==b\\,c").unwrap();
    assert_eq!(f.requirements.len(), 3);
    assert_eq!(f.requirements[2].value, "b,c");
    assert_eq!(f.exact("metadata.name"), Some("x"));
    let get = |k: &str| match k {
        "metadata.name" => Some("x".into()),
        "status.phase" => Some("Terminating".into()),
        "a" => Some("b,c".into()),
        _ => None,
    };
    assert!(f.matches(get));
    assert!(FieldSelector::parse("foo").is_err());
    assert!(FieldSelector::parse("a=b\\x").is_err());
}

#[test]
fn dns_names() {
    assert!(is_dns1123_subdomain("a.b-c"));
    assert!(!is_dns1123_subdomain("A"));
    assert!(is_dns1123_label("kube-system"));
    assert!(!is_dns1123_label("a.b"));
    assert!(qualified_name_errors("app.kubernetes.io/name").is_empty());
    assert!(!qualified_name_errors("a/b/c").is_empty());
}
