//! The runtime cost of CEL expressions, and the limits upstream puts on it
//! (k8s.io/apiserver/pkg/apis/cel's `PerCallLimit`, `RuntimeCELCostBudget`,
//! `RuntimeCELCostBudgetMatchConditions`).
//!
//! cel-go counts what an evaluation does as it goes; the `cel` crate has no such hook, so
//! [`meter`] rewrites an expression's comprehensions (`all`, `exists`, `exists_one`, `map`,
//! `filter`) to charge each iteration before it runs, at what cel-go charges for the nodes of
//! unit cost in its condition and step (identifiers, field selections, function calls; list
//! and map literals at their base cost). Only comprehensions are metered: the rest of an
//! expression runs once and is bounded by its length. The count is a lower bound of cel-go's
//! (string and list functions whose cost grows with their arguments' size count one), so an
//! expression cut off here is one upstream cuts off too, and iterations, the only way an
//! expression's work grows past its length times its input, cannot run unbounded.
//!
//! [`execute`] runs an expression under the per-call limit (over it, the evaluation fails with
//! a function error whose message is cel-go's `operation cancelled: actual cost limit
//! exceeded`) and charges what it spent to the budget [`with_budget`] opened, if any: once spent, every further expression fails with
//! upstream's `validation failed due to running out of cost budget, ...` without running.

use kube_cel::cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use kube_cel::cel::{Context, ExecutionError, FunctionContext, Value as CelValue};
use std::cell::Cell;

/// The most one expression's evaluation may cost (`PerCallLimit`).
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;
/// What a policy binding's validations may cost together, per params object
/// (`RuntimeCELCostBudget`); mutations and audit annotations get the same.
pub(crate) const RUNTIME_BUDGET: u64 = 10_000_000;
/// What one webhook's or binding's matchConditions may cost together
/// (`RuntimeCELCostBudgetMatchConditions`).
pub(crate) const MATCH_CONDITIONS_BUDGET: u64 = 2_500_000;

/// cel-go's error when one evaluation passes the per-call limit.
pub(crate) const COST_LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";
/// Upstream's error when the expressions sharing a budget spent it.
pub(crate) const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// The function a metered comprehension's step calls: `__kapi_cost__(<cost>, <step>)`.
const CHARGE: &str = "__kapi_cost__";

/// cel-go's base cost of creating a list and a map literal (common.ListCreateBaseCost,
/// MapCreateBaseCost).
const LIST_CREATE: u64 = 10;
const MAP_CREATE: u64 = 30;

thread_local! {
    /// What the running evaluation has spent, and its limit.
    static SPENT: Cell<(u64, u64)> = const { Cell::new((0, PER_CALL_LIMIT)) };
    /// The budget the running expressions are charged to.
    static LEFT: Cell<Budget> = const { Cell::new(Budget::None) };
}

/// The state of the budget [`with_budget`] opened.
#[derive(Clone, Copy, PartialEq)]
enum Budget {
    /// None is open: only the per-call limit applies.
    None,
    Left(u64),
    Spent,
}

/// Rewrites every comprehension in `expr` to charge each iteration (see the module's doc).
pub(crate) fn meter(expr: &mut IdedExpr) {
    super::visit_mut(expr, &mut |e| {
        let Expr::Comprehension(c) = &mut e.expr else {
            return;
        };
        let cost = (unit_cost(&c.loop_cond) + unit_cost(&c.loop_step)).max(1);
        let step = std::mem::take(&mut c.loop_step);
        c.loop_step = IdedExpr {
            id: step.id,
            expr: Expr::Call(CallExpr {
                func_name: CHARGE.to_string(),
                target: None,
                args: vec![
                    IdedExpr {
                        id: step.id,
                        expr: Expr::Literal(LiteralValue::Int(
                            i64::try_from(cost).unwrap_or(i64::MAX).into(),
                        )),
                    },
                    step,
                ],
            }),
        };
    });
}

/// What cel-go charges for evaluating `e` once, counting nodes of unit cost; a nested
/// comprehension counts its range, start and result (its iterations charge themselves).
fn unit_cost(e: &IdedExpr) -> u64 {
    match &e.expr {
        Expr::Ident(_) => 1,
        Expr::Literal(_) | Expr::Unspecified => 0,
        Expr::Select(s) => 1 + unit_cost(&s.operand),
        Expr::Call(c) => {
            // The logical operators and the conditional are not calls in cel-go's
            // interpreter: only their operands cost.
            let own = u64::from(!matches!(
                c.func_name.as_str(),
                "_&&_" | "_||_" | "_?_:_" | CHARGE
            ));
            own + c.target.as_deref().map_or(0, unit_cost)
                + c.args.iter().map(unit_cost).sum::<u64>()
        }
        Expr::List(l) => LIST_CREATE + l.elements.iter().map(unit_cost).sum::<u64>(),
        Expr::Map(m) => MAP_CREATE + m.entries.iter().map(|e| entry_cost(&e.expr)).sum::<u64>(),
        Expr::Struct(s) => MAP_CREATE + s.entries.iter().map(|e| entry_cost(&e.expr)).sum::<u64>(),
        Expr::Comprehension(c) => {
            unit_cost(&c.iter_range) + unit_cost(&c.accu_init) + unit_cost(&c.result)
        }
    }
}

fn entry_cost(e: &EntryExpr) -> u64 {
    match e {
        EntryExpr::MapEntry(m) => unit_cost(&m.key) + unit_cost(&m.value),
        EntryExpr::StructField(f) => unit_cost(&f.value),
    }
}

/// Registers the function metered steps call.
pub(crate) fn register(ctx: &mut Context<'_>) {
    ctx.add_function(CHARGE, charge);
}

/// Charges a step's cost, then runs it; over the limit, fails instead.
fn charge(ftx: &FunctionContext) -> Result<CelValue, ExecutionError> {
    let cost = match ftx.args.first().map(|a| &a.expr) {
        Some(Expr::Literal(LiteralValue::Int(n))) => u64::try_from(*n.inner()).unwrap_or(1),
        _ => 1,
    };
    let within = SPENT.with(|s| {
        let (spent, limit) = s.get();
        let spent = spent.saturating_add(cost);
        s.set((spent, limit));
        spent <= limit
    });
    if !within {
        return Err(ftx.error(COST_LIMIT_EXCEEDED));
    }
    let step = ftx.args.get(1).ok_or_else(|| ftx.error("no step to run"))?;
    CelValue::resolve(step, ftx.ptx)
}

/// The open budget is spent: this and every further expression under it fail.
#[derive(Debug, PartialEq)]
pub(crate) struct OutOfBudget;

/// Runs an expression (`run` evaluates it) under the per-call limit, charging what it spent
/// to the open budget.
pub(crate) fn execute<T>(run: impl FnOnce() -> T) -> Result<T, OutOfBudget> {
    if LEFT.with(Cell::get) == Budget::Spent {
        return Err(OutOfBudget);
    }
    let outer = SPENT.with(|s| s.replace((0, PER_CALL_LIMIT)));
    let result = run();
    let (spent, _) = SPENT.with(|s| s.replace(outer));
    if let Budget::Left(left) = LEFT.with(Cell::get) {
        if spent > left {
            LEFT.with(|l| l.set(Budget::Spent));
            return Err(OutOfBudget);
        }
        LEFT.with(|l| l.set(Budget::Left(left - spent)));
    }
    Ok(result)
}

/// What one metered evaluation gave.
pub(crate) enum Outcome {
    Value(CelValue),
    Error(ExecutionError),
    /// The interpreter panicked (it does on a few expressions).
    Unsupported,
}

/// Runs `expr` (metered by [`meter`]) in `ctx` under the per-call limit, charged to the open
/// budget; a panic of the interpreter is caught and reported as [`Outcome::Unsupported`].
pub(crate) fn run(expr: &IdedExpr, ctx: &Context<'_>) -> Result<Outcome, OutOfBudget> {
    execute(|| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            CelValue::resolve(expr, ctx)
        })) {
            Ok(Ok(v)) => Outcome::Value(v),
            Ok(Err(e)) => Outcome::Error(e),
            Err(_panicked) => Outcome::Unsupported,
        }
    })
}

/// Runs `f` with a budget of `budget` for the expressions it executes; also says whether they
/// ran out of it.
pub(crate) fn with_budget<T>(budget: u64, f: impl FnOnce() -> T) -> (T, bool) {
    let outer = LEFT.with(|l| l.replace(Budget::Left(budget)));
    let out = f();
    let left = LEFT.with(|l| l.replace(outer));
    (out, left == Budget::Spent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> Context<'static> {
        let mut ctx = Context::default();
        register(&mut ctx);
        ctx
    }

    /// Why [`run`] gave no value.
    #[derive(Debug, PartialEq)]
    enum Failure {
        Error(String),
        OutOfBudget,
    }

    fn run(source: &str, ctx: &Context<'_>) -> Result<CelValue, Failure> {
        let mut expr = super::super::parse(source, false).unwrap();
        meter(&mut expr);
        match execute(|| CelValue::resolve(&expr, ctx)) {
            Err(OutOfBudget) => Err(Failure::OutOfBudget),
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Failure::Error(
                crate::registry::cel::wording::runtime_error(&e),
            )),
        }
    }

    #[test]
    fn metered_comprehensions_give_the_values_they_gave() {
        let ctx = context();
        for (source, want) in [
            ("[1, 2, 3].all(x, x > 0)", CelValue::Bool(true)),
            ("[1, 2, 3].exists(x, x == 2)", CelValue::Bool(true)),
            ("[1, 2, 3].exists_one(x, x > 1)", CelValue::Bool(false)),
            ("[1, 2, 3].map(x, x * 2) == [2, 4, 6]", CelValue::Bool(true)),
            ("[1, 2, 3].filter(x, x != 2).size()", CelValue::Int(2)),
            (
                "[[1], [2, 3]].all(l, l.all(x, x < 4))",
                CelValue::Bool(true),
            ),
        ] {
            assert_eq!(run(source, &ctx), Ok(want), "{source}");
        }
    }

    #[test]
    fn an_evaluation_past_the_per_call_limit_is_cancelled() {
        let ctx = context();
        // 1,000 × 1,000 iterations of a step costing more than one.
        let thousand = format!("[{}]", vec!["0"; 1000].join(","));
        let nested = format!("{thousand}.all(x, {thousand}.all(y, x == y))");
        assert_eq!(
            run(&nested, &ctx),
            Err(Failure::Error(COST_LIMIT_EXCEEDED.to_string()))
        );
        // One pass over the same list is well within it.
        assert_eq!(
            run(&format!("{thousand}.all(x, x == 0)"), &ctx),
            Ok(CelValue::Bool(true))
        );
    }

    #[test]
    fn expressions_sharing_a_budget_stop_once_it_is_spent() {
        let ctx = context();
        let hundred = format!("[{}]", vec!["0"; 100].join(","));
        let costly = format!("{hundred}.all(x, {hundred}.all(y, x == y))");
        // Each evaluation costs about 100 × 100 × 6 = 60,000: two fit in 150,000, three do not.
        let (results, ran_out) = with_budget(150_000, || {
            (0..4).map(|_| run(&costly, &ctx)).collect::<Vec<_>>()
        });
        assert!(ran_out);
        assert_eq!(
            results[..2],
            [Ok(CelValue::Bool(true)), Ok(CelValue::Bool(true))]
        );
        assert_eq!(
            results[2..],
            [Err(Failure::OutOfBudget), Err(Failure::OutOfBudget)]
        );
        // Outside the budget's scope, the same expression runs again.
        assert_eq!(run(&costly, &ctx), Ok(CelValue::Bool(true)));
        let ((), ran_out) = with_budget(150_000, || {});
        assert!(!ran_out);
    }
}
