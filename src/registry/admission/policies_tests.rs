use super::*;
use serde_json::json;

/// A policy whose validations each compare every pair of a hundred numbers: about 61,000 of
/// runtime cost each.
fn pairwise(validations: usize) -> Policy {
    let hundred = format!("[{}]", vec!["0"; 100].join(","));
    let rule = format!("{hundred}.all(x, {hundred}.all(y, x == y || true))");
    let validations: Vec<Value> = (0..validations)
        .map(|_| json!({"expression": rule}))
        .collect();
    Policy::new(&json!({
        "metadata": {"name": "pairs"},
        "spec": {"failurePolicy": "Fail", "validations": validations},
    }))
}

#[test]
fn validations_that_spend_the_budget_fail_the_evaluation_with_one_error() {
    let policy = pairwise(3);
    BASE.with(|base| {
        let within = decide(&policy, base, None, RUNTIME_BUDGET);
        assert_eq!(
            within.decisions,
            [Decision::Admit, Decision::Admit, Decision::Admit]
        );
        // Room for one of them: the second runs out, the third does not run, and the
        // policy's answer is upstream's one error.
        let spent = decide(&policy, base, None, 100_000);
        assert_eq!(
            spent.decisions,
            [Decision::Error {
                message: OUT_OF_BUDGET.to_string(),
                compile: false,
            }]
        );
    });
}
