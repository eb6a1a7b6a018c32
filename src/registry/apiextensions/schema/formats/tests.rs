//! Formats as strfmt and Go's parsers decide them.

use super::*;

#[test]
fn formats_follow_strfmt() {
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "date-time",
            &["2006-01-02T15:04:05Z", "2006-01-02t15:04:05.5+01:00"],
            &["2006-01-02", "2006-01-02T25:00:00Z"],
        ),
        ("date", &["2024-02-29"], &["2023-02-29", "2023-1-01"]),
        (
            "duration",
            &["1h30m", "5 minutes", "3d", "0"],
            &["five", "1x"],
        ),
        ("uuid", &["123e4567-e89b-12d3-a456-426614174000"], &["123"]),
        (
            "ipv4",
            &["1.2.3.4", "01.2.3.4", "::ffff:1.2.3.4"],
            &["1.2.3", "::1"],
        ),
        ("ipv6", &["::1", "::ffff:1.2.3.4"], &["1.2.3.4"]),
        (
            "cidr",
            &["10.0.0.0/8", "fd00::/64"],
            &["10.0.0.0/33", "10.0.0.0"],
        ),
        (
            "mac",
            &["00:00:5e:00:53:01", "0000.5e00.5301"],
            &["00:00:5e:00:53"],
        ),
        ("hostname", &["example.com", "a"], &["-a.com"]),
        ("email", &["a@b.c", "Bob <bob@example.com>"], &["a", "a@"]),
        (
            "uri",
            &["http://example.com/a?b", "/path", "mailto:x"],
            &["a b", "rel/path", "http://h:x/"],
        ),
        ("byte", &["aGVsbG8="], &["", "a"]),
        ("k8s-short-name", &["a-b"], &["a-", "A"]),
        ("k8s-long-name", &["a.b-c"], &["a.-"]),
        ("isbn", &["0321751043", "978-0321751041"], &["0321751044"]),
        (
            "creditcard",
            &["4111 1111 1111 1111"],
            &["4111 1111 1111 1112"],
        ),
        ("ssn", &["123-45-6789"], &["123456789"]),
        ("hexcolor", &["#fff"], &["#ffff"]),
        ("rgbcolor", &["rgb(1, 2, 255)"], &["rgb(256,0,0)"]),
        ("bsonobjectid", &["507f1f77bcf86cd799439011"], &["507f"]),
    ];
    for (name, good, bad) in cases {
        let f = Format::lookup(name).unwrap();
        for s in *good {
            assert!(f.validates(s), "{name} {s}");
        }
        for s in *bad {
            assert!(!f.validates(s), "{name} {s}");
        }
    }
    assert_eq!(Format::lookup("int32"), None);
    assert_eq!(Format::lookup("Date-Time"), None);
}
