//! Estimates checked against upstream's own expectations (apiextensions-apiserver
//! pkg/apiserver/schema/cel/compilation_test.go `TestCostEstimation`): every case is estimated
//! without bounds in the schema ("calc") and with them ("set").

use super::estimate;
use crate::registry::cel::decl::decl;
use crate::registry::cel::parse;
use serde_json::{json, Value};

/// The estimated maximum cost of `rule` on schema node `s`.
fn cost(s: &Value, rule: &str) -> u64 {
    let d = decl(s, false).expect("the schema declares a type");
    let e = parse(rule, false).expect("the rule parses");
    estimate(&e, &d).max
}

fn with(mut v: Value, key: &str, max: Option<i64>) -> Value {
    if let Some(m) = max {
        v[key] = json!(m);
    }
    v
}

fn prim(ty: &str) -> Value {
    match ty {
        "duration" | "date" | "date-time" => json!({"type": "string", "format": ty}),
        "int-or-string" => json!({"x-kubernetes-int-or-string": true}),
        _ => json!({"type": ty}),
    }
}

fn array(ty: &'static str) -> impl Fn(Option<i64>) -> Value {
    move |m| with(json!({"type": "array", "items": prim(ty)}), "maxItems", m)
}

fn array_of_arrays(ty: &'static str) -> impl Fn(Option<i64>) -> Value {
    move |m| {
        let items = json!({"type": "array", "items": {"type": ty}});
        with(json!({"type": "array", "items": items}), "maxItems", m)
    }
}

fn object_item() -> Value {
    json!({"type": "object", "required": ["required"],
        "properties": {"required": {"type": "string"}, "optional": {"type": "string"}}})
}

fn object_array(m: Option<i64>) -> Value {
    with(
        json!({"type": "array", "items": object_item()}),
        "maxItems",
        m,
    )
}

fn map_array(ty: &'static str) -> impl Fn(Option<i64>) -> Value {
    move |m| {
        let items = json!({"type": "object", "additionalProperties": {"type": ty}});
        with(json!({"type": "array", "items": items}), "maxItems", m)
    }
}

fn map_of(item: Value) -> impl Fn(Option<i64>) -> Value {
    move |m| {
        with(
            json!({"type": "object", "additionalProperties": item.clone()}),
            "maxProperties",
            m,
        )
    }
}

fn string(m: Option<i64>) -> Value {
    with(json!({"type": "string"}), "maxLength", m)
}

fn bytes(m: Option<i64>) -> Value {
    with(json!({"type": "string", "format": "byte"}), "maxLength", m)
}

fn nested_spec(m: Option<i64>) -> Value {
    let item = with(json!({"type": "string"}), "maxLength", m);
    with(
        json!({"type": "object", "additionalProperties": item}),
        "maxProperties",
        m,
    )
}

fn nested_all_max(m: Option<i64>) -> Value {
    let inner = with(object_item(), "maxProperties", m);
    let items = with(
        json!({"type": "object", "additionalProperties": inner}),
        "maxProperties",
        m,
    );
    with(json!({"type": "array", "items": items}), "maxItems", m)
}

fn nested_one_max(m: Option<i64>) -> Value {
    let items = with(
        json!({"type": "object", "additionalProperties": object_item()}),
        "maxProperties",
        m,
    );
    json!({"type": "array", "items": items})
}

/// (schema, rule, cost unbounded, bound, cost bounded); a cost of 0 is not checked.
type Case = (
    Box<dyn Fn(Option<i64>) -> Value>,
    &'static str,
    u64,
    i64,
    u64,
);

fn cases() -> Vec<Case> {
    vec![
        (
            Box::new(array("number")),
            "self.all(x, true)",
            4718591,
            10,
            32,
        ),
        (
            Box::new(array("string")),
            "self.all(x, true)",
            3145727,
            20,
            62,
        ),
        (
            Box::new(array("boolean")),
            "self.all(x, true)",
            1887437,
            5,
            17,
        ),
        (
            Box::new(array_of_arrays("number")),
            "self.all(x, true)",
            3145727,
            100,
            302,
        ),
        (Box::new(object_array), "self.all(x, true)", 555128, 50, 152),
        (
            Box::new(map_of(prim("number"))),
            "self.all(x, true)",
            1348169,
            10,
            32,
        ),
        (
            Box::new(map_of(prim("string"))),
            "self.all(x, true)",
            1179647,
            3,
            11,
        ),
        (
            Box::new(map_of(prim("boolean"))),
            "self.all(x, true)",
            943718,
            100,
            302,
        ),
        (Box::new(string), "self.contains('test')", 314574, 10, 5),
        (Box::new(string), "self.startsWith('test')", 2, 15, 2),
        (Box::new(string), "self.endsWith('test')", 2, 30, 2),
        (
            Box::new(string),
            r#"size(self + "hello") > size("hello")"#,
            314578,
            4,
            7,
        ),
        (Box::new(array("number")), "self[1] == 0.0", 2, 5000, 2),
        (
            Box::new(array("string")),
            "self[1] == self[1]",
            314577,
            8,
            314577,
        ),
        (
            Box::new(array("number")),
            "self.all(x, self.all(y, true))",
            0,
            10,
            352,
        ),
        (
            Box::new(array("number")),
            "self.all(x, self.all(y, self.all(z, true)))",
            0,
            10,
            3552,
        ),
        (Box::new(string), r#"self.matches("x")"#, 314574, 50, 22),
        (
            Box::new(string),
            r#""".matches("(((((((((())))))))))[0-9]")"#,
            7,
            10,
            7,
        ),
        (Box::new(string), r#"self.matches("")"#, 1, 100, 1),
        (
            Box::new(nested_spec),
            "self.all(x, x.contains(self[x]))",
            2752507,
            10,
            72,
        ),
        (Box::new(array("number")), "self[3] == 0.0", 2, 0, 2),
        (
            Box::new(map_of(prim("number"))),
            r#"self["x"] == 0.0"#,
            2,
            0,
            2,
        ),
        (Box::new(string), r#"self == "x""#, 2, 0, 1),
        (Box::new(bytes), r#"self == b"x""#, 2, 0, 1),
        (
            Box::new(array("number")),
            "self.all(x, x == 0.0)",
            6291454,
            3 * 1024 * 2048,
            25165826,
        ),
        (
            Box::new(nested_all_max),
            r#"self.all(x, x["y"].required == "z")"#,
            7340027,
            10,
            72,
        ),
        (
            Box::new(nested_one_max),
            r#"self.all(x, x["y"].required == "z")"#,
            7340027,
            10,
            7340027,
        ),
        (
            Box::new(array("int-or-string")),
            "self.all(x, true)",
            4718591,
            10,
            32,
        ),
        (Box::new(array("int-or-string")), "self[0] == 5", 3, 10, 3),
        (Box::new(array("boolean")), "self[0] == false", 2, 25, 2),
        (Box::new(object_array), "self[0] == null", 2, 422, 2),
        (
            Box::new(array_of_arrays("number")),
            "self[0][0] == -1.0",
            3,
            51,
            3,
        ),
        (
            Box::new(map_array("number")),
            "self.all(x, x.y == 25.2)",
            6291452,
            12,
            74,
        ),
        (Box::new(map_array("number")), "self[0].x > 2.0", 4, 3000, 4),
        (
            Box::new(array("duration")),
            "self.all(x, true)",
            2359295,
            5,
            17,
        ),
        (
            Box::new(array("duration")),
            "self[0].getHours() == 2",
            4,
            525,
            4,
        ),
        (Box::new(array("date")), "self.all(x, true)", 725936, 15, 47),
        (
            Box::new(array("date")),
            "self[2].getDayOfMonth() == 13",
            4,
            42,
            4,
        ),
        (
            Box::new(array("date-time")),
            "self.all(x, true)",
            428963,
            25,
            77,
        ),
        (
            Box::new(array("date-time")),
            "self[2].getMinutes() == 45",
            4,
            99,
            4,
        ),
        (
            Box::new(map_of(prim("int-or-string"))),
            "self.all(x, true)",
            1348169,
            15,
            47,
        ),
        (
            Box::new(map_of(object_item())),
            "self.all(x, true)",
            428963,
            20,
            62,
        ),
        (
            Box::new(map_of(
                json!({"type": "object", "additionalProperties": {"type": "number"}}),
            )),
            "self.all(x, true)",
            1179647,
            10,
            32,
        ),
        (
            Box::new(map_of(
                json!({"type": "array", "items": {"type": "number"}}),
            )),
            "self.all(x, true)",
            1179647,
            25,
            77,
        ),
        (
            Box::new(map_of(prim("duration"))),
            "self.all(x, true)",
            1048577,
            5,
            17,
        ),
        (
            Box::new(map_of(prim("date"))),
            "self.all(x, true)",
            524288,
            10,
            32,
        ),
        (
            Box::new(map_of(prim("date-time"))),
            "self.all(x, true)",
            349526,
            25,
            77,
        ),
        (
            Box::new(string),
            "self.find('[0-9]+') == ''",
            629147,
            10,
            11,
        ),
        (
            Box::new(map_of(prim("integer"))),
            "oldSelf.size() == self.size()",
            5,
            10,
            5,
        ),
        (
            Box::new(map_of(prim("date-time"))),
            r#"self["a"] == self["b"]"#,
            8,
            7,
            8,
        ),
        (
            Box::new(map_of(prim("duration"))),
            r#"self["c"] == self["d"]"#,
            8,
            42,
            8,
        ),
    ]
}

#[test]
fn estimates_match_upstream() {
    let mut wrong = Vec::new();
    for (schema, rule, calc, bound, set) in cases() {
        let unbounded = cost(&schema(None), rule);
        if calc > 0 && unbounded != calc {
            wrong.push(format!("{rule} unbounded: {unbounded}, upstream {calc}"));
        }
        if calc == 0 && unbounded <= 10_000_000 {
            wrong.push(format!(
                "{rule} unbounded: {unbounded}, upstream over the limit"
            ));
        }
        let bounded = cost(&schema(Some(bound)), rule);
        if bounded != set {
            wrong.push(format!(
                "{rule} bounded by {bound}: {bounded}, upstream {set}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn presence_tests_cost_only_their_operand() {
    // `self` costs 1; the test itself is free, as Kubernetes configures cel-go.
    for item in [prim("number"), prim("string"), object_item()] {
        assert_eq!(cost(&map_of(item)(None), "has(self.x)"), 1);
    }
}

#[test]
fn library_estimates_match_upstream() {
    let strings = |m: Option<i64>| {
        let item = with(json!({"type": "string"}), "maxLength", m);
        with(json!({"type": "array", "items": item}), "maxItems", m)
    };
    assert_eq!(
        cost(&strings(None), "self.join(' ') == 'aa bb'"),
        329853068905
    );
    assert_eq!(cost(&strings(Some(10)), "self.join(' ') == 'aa bb'"), 43);
    assert_eq!(
        cost(&strings(None), "self.isSorted() == true"),
        329854432052
    );
    assert_eq!(cost(&strings(Some(10)), "self.isSorted() == true"), 52);
    let replace = |m: Option<i64>| {
        json!({"type": "object", "properties": {
            "str": with(json!({"type": "string"}), "maxLength", m),
            "before": {"type": "string", "maxLength": 2},
            "after": {"type": "string", "maxLength": 4},
        }})
    };
    let rule = "self.str.replace(self.before, self.after) == 'does not matter'";
    assert_eq!(cost(&replace(None), rule), 629154);
    assert_eq!(cost(&replace(Some(4)), rule), 12);
    let split = |m: Option<i64>| {
        let s = with(json!({"type": "string"}), "maxLength", m);
        json!({"type": "object", "properties": {"str": s.clone(), "separator": s}})
    };
    let rule = "self.str.split(self.separator) == []";
    assert_eq!(cost(&split(None), rule), 629160);
    assert_eq!(cost(&split(Some(10)), rule), 22);
    assert_eq!(cost(&string(None), "self.lowerAscii() == 'lower!'"), 314575);
    assert_eq!(cost(&string(Some(10)), "self.lowerAscii() == 'lower!'"), 6);
    let enumerated = |m: Option<i64>| {
        with(
            json!({"type": "string", "enum": ["A", "B", "C", "LongValue"]}),
            "maxLength",
            m,
        )
    };
    assert_eq!(cost(&enumerated(None), "self.contains('A')"), 2);
    assert_eq!(cost(&enumerated(Some(1000)), "self.contains('A')"), 401);
    let quantity =
        |m: Option<i64>| with(json!({"x-kubernetes-int-or-string": true}), "maxLength", m);
    assert_eq!(cost(&quantity(None), "isQuantity(self)"), 314574);
    assert_eq!(cost(&quantity(Some(20)), "isQuantity(self)"), 9);
}

#[test]
fn resource_roots_bound_the_name() {
    // metadata.name is at most 253 characters unless the schema says fewer.
    let root = json!({"type": "object"});
    let d = decl(&root, true).expect("an object");
    let e = parse("self.metadata.name.contains('x')", false).expect("parses");
    let c = estimate(&e, &d).max;
    assert!(c > 0 && c <= 10_000, "{c}");
}
