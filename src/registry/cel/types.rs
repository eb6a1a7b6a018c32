//! The type of every expression node, as far as cel-go's checker would infer it for choosing
//! an overload and a size (cost estimation) and for the checks it makes against a schema: a
//! field an object type does not declare, an identifier nothing declares, an operator or string
//! function applied to primitive operands no overload takes. Anything not known
//! is `dyn`, which makes estimation take every overload that could apply (as cel-go does for a
//! dynamic operand), so an unknown type can raise an estimate, never lower it, and is never
//! reported.

use super::decl::{Decl, Kind};
use super::issues::{Issue, Token};
use super::overloads::{self, Operand, Prim};
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use std::collections::HashMap;

/// A CEL type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ty<'d> {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    Type,
    List(Box<Ty<'d>>),
    Map(Box<Ty<'d>>, Box<Ty<'d>>),
    /// An object of a schema (a declared struct).
    Object(&'d Decl),
    /// A type of Kubernetes' library: `quantity`, `url`, `ip`, `cidr`, `semver`, `format`.
    Library(&'static str),
    Optional(Box<Ty<'d>>),
}

impl<'d> Ty<'d> {
    /// The type of a value of declared type `d`.
    pub(crate) fn of(d: &'d Decl) -> Ty<'d> {
        match &d.kind {
            Kind::Dyn => Ty::Dyn,
            Kind::Bool => Ty::Bool,
            Kind::Int => Ty::Int,
            Kind::Double => Ty::Double,
            Kind::String => Ty::String,
            Kind::Bytes => Ty::Bytes,
            Kind::Duration => Ty::Duration,
            Kind::Timestamp => Ty::Timestamp,
            Kind::List(e) => Ty::List(Box::new(Ty::of(e))),
            Kind::Map(v) => Ty::Map(Box::new(Ty::String), Box::new(Ty::of(v))),
            Kind::Object(_) => Ty::Object(d),
        }
    }

    pub(crate) fn is_dyn(&self) -> bool {
        matches!(self, Ty::Dyn)
    }

    /// This type as a primitive one, when it is.
    fn prim(&self) -> Option<Prim> {
        Some(match self {
            Ty::Bool => Prim::Bool,
            Ty::Int => Prim::Int,
            Ty::Uint => Prim::Uint,
            Ty::Double => Prim::Double,
            Ty::String => Prim::String,
            Ty::Bytes => Prim::Bytes,
            Ty::Duration => Prim::Duration,
            Ty::Timestamp => Prim::Timestamp,
            _ => return None,
        })
    }

    /// Whether a value of this type may be of the type `pred` accepts.
    pub(crate) fn could(&self, pred: impl Fn(&Ty<'d>) -> bool) -> bool {
        self.is_dyn() || pred(self)
    }

    pub(crate) fn is_list(&self) -> bool {
        matches!(self, Ty::List(_))
    }

    pub(crate) fn is_map(&self) -> bool {
        matches!(self, Ty::Map(..))
    }

    /// cel-go's MapKind, StructKind or TypeParamKind: a select on it costs one more.
    pub(crate) fn selects_field(&self) -> bool {
        matches!(self, Ty::Map(..) | Ty::Object(_))
    }

    /// A scalar: its size is 1.
    pub(crate) fn is_scalar(&self) -> bool {
        match self {
            Ty::Bool | Ty::Double | Ty::Duration | Ty::Int | Ty::Timestamp | Ty::Uint => true,
            Ty::Optional(t) => t.is_scalar(),
            _ => false,
        }
    }

    /// The first type parameter (a list's element, a map's key, an optional's value).
    pub(crate) fn first_parameter(&self) -> Option<&Ty<'d>> {
        match self {
            Ty::List(t) | Ty::Map(t, _) | Ty::Optional(t) => Some(t),
            _ => None,
        }
    }
}

/// Infers and remembers the type of every node of an expression.
pub(crate) struct Typer<'d> {
    scopes: Vec<(String, Ty<'d>)>,
    pub(crate) types: HashMap<u64, Ty<'d>>,
    /// Undefined fields, undeclared identifiers and calls no overload takes met.
    pub(crate) issues: Vec<Issue>,
}

impl<'d> Typer<'d> {
    pub(crate) fn new(vars: Vec<(String, Ty<'d>)>) -> Self {
        Typer {
            scopes: vars,
            types: HashMap::new(),
            issues: Vec::new(),
        }
    }

    fn var(&mut self, name: &str, id: u64) -> Ty<'d> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return t.clone();
        }
        match name {
            "int" | "uint" | "double" | "string" | "bytes" | "bool" | "list" | "map"
            | "null_type" | "type" => Ty::Type,
            _ if super::DECLARED_NAMES.contains(&name) => Ty::Dyn,
            _ => {
                self.issues.push(Issue {
                    id,
                    message: format!("undeclared reference to '{name}' (in container '')"),
                    token: Token::Ident,
                });
                Ty::Dyn
            }
        }
    }

    /// The type of `name` of a value of type `operand`, noting a field its object type does
    /// not declare.
    fn field(&mut self, operand: &Ty<'d>, name: &str, id: u64) -> Ty<'d> {
        match operand {
            Ty::Object(d) => match &d.kind {
                Kind::Object(fields) => match fields.get(name) {
                    Some(f) => Ty::of(f),
                    None => {
                        self.issues.push(Issue {
                            id,
                            message: format!("undefined field '{name}'"),
                            token: Token::Dot,
                        });
                        Ty::Dyn
                    }
                },
                _ => Ty::Dyn,
            },
            Ty::Map(_, v) => (**v).clone(),
            _ => Ty::Dyn,
        }
    }

    pub(crate) fn infer(&mut self, e: &IdedExpr) -> Ty<'d> {
        let t = match &e.expr {
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::Uint,
            },
            Expr::Ident(name) => self.var(name, e.id),
            Expr::Select(s) => {
                let operand = self.infer(&s.operand);
                let t = self.field(&operand, &s.field, e.id);
                if s.test {
                    Ty::Bool
                } else {
                    t
                }
            }
            Expr::List(l) => {
                let elems: Vec<Ty<'d>> = l.elements.iter().map(|x| self.infer(x)).collect();
                Ty::List(Box::new(common(elems)))
            }
            Expr::Map(m) => {
                let (mut keys, mut values) = (Vec::new(), Vec::new());
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        keys.push(self.infer(&me.key));
                        values.push(self.infer(&me.value));
                    }
                }
                Ty::Map(Box::new(common(keys)), Box::new(common(values)))
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.infer(&f.value);
                    }
                }
                Ty::Dyn
            }
            Expr::Call(c) => {
                let target = c.target.as_ref().map(|t| self.infer(t));
                let args: Vec<Ty<'d>> = c.args.iter().map(|a| self.infer(a)).collect();
                if !self.check_overload(e.id, &c.func_name, target.as_ref(), &args) {
                    // As cel-go: the call's type is an error, which reports nothing further.
                    self.types.insert(e.id, Ty::Dyn);
                    return Ty::Dyn;
                }
                // Optional selects and indexes: on the value of an optional operand.
                let value = |t: &Ty<'d>| match t {
                    Ty::Optional(v) => (**v).clone(),
                    t => t.clone(),
                };
                match (c.func_name.as_str(), c.args.as_slice()) {
                    (super::OPT_SELECT, [_, field]) => match &field.expr {
                        Expr::Literal(LiteralValue::String(f)) => {
                            let t = self.field(&value(&args[0]), f.inner(), e.id);
                            Ty::Optional(Box::new(t))
                        }
                        _ => Ty::Dyn,
                    },
                    ("_[?_]", [_, _]) => {
                        let t = call("_[_]", None, &[value(&args[0]), args[1].clone()]);
                        Ty::Optional(Box::new(t))
                    }
                    _ => call(&c.func_name, target.as_ref(), &args),
                }
            }
            Expr::Comprehension(c) => {
                let range = self.infer(&c.iter_range);
                let (first, second) = match (&range, c.iter_var2.is_some()) {
                    (Ty::List(e), false) => ((**e).clone(), Ty::Dyn),
                    (Ty::List(e), true) => (Ty::Int, (**e).clone()),
                    (Ty::Map(k, v), _) => ((**k).clone(), (**v).clone()),
                    _ => (Ty::Dyn, Ty::Dyn),
                };
                let mut accu = self.infer(&c.accu_init);
                let depth = self.scopes.len();
                self.scopes.push((c.iter_var.clone(), first));
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((v2.clone(), second));
                }
                if accu == Ty::List(Box::new(Ty::Dyn)) {
                    // `[]` grows by what the step appends (map and filter).
                    self.scopes.push((c.accu_var.clone(), accu.clone()));
                    let step = self.infer(&c.loop_step);
                    self.scopes.pop();
                    if step.is_list() {
                        accu = step;
                    }
                }
                self.scopes.push((c.accu_var.clone(), accu));
                self.infer(&c.loop_cond);
                self.infer(&c.loop_step);
                self.scopes.truncate(depth);
                let accu = self.var_in_result(c);
                self.scopes.push((c.accu_var.clone(), accu));
                let result = self.infer(&c.result);
                self.scopes.truncate(depth);
                result
            }
            Expr::Unspecified => Ty::Dyn,
        };
        self.types.insert(e.id, t.clone());
        t
    }

    /// Notes a call whose operands all have primitive types no overload of `func` takes
    /// (operators, the string functions and conversions, the list library on lists of
    /// primitives, the methods of Kubernetes' library types; see [`overloads`]); false when it
    /// is one.
    fn check_overload(
        &mut self,
        id: u64,
        func: &str,
        target: Option<&Ty<'d>>,
        args: &[Ty<'d>],
    ) -> bool {
        if let Some(Ty::Library(lib)) = target {
            let operands = args.iter().map(|a| match a {
                Ty::Library(l) => Some(Operand::Library(l)),
                t => t.prim().map(Operand::Prim),
            });
            let Some(operands) = operands.collect::<Option<Vec<_>>>() else {
                return true;
            };
            let checked = overloads::library_method(lib, func, &operands);
            return self.noted(id, checked.map_err(|m| (m, Token::Paren)));
        }
        let Some(prims) = args.iter().map(Ty::prim).collect::<Option<Vec<_>>>() else {
            return true;
        };
        if let Some(Ty::List(elem)) = target {
            let Some(elem) = elem.prim() else {
                return true;
            };
            let checked = overloads::list_method(func, elem, &prims);
            return self.noted(id, checked.map_err(|m| (m, Token::Paren)));
        }
        let target = match target.map(Ty::prim) {
            None => None,
            Some(Some(p)) => Some(p),
            // A target whose type is not primitive: not checked here.
            Some(None) => return true,
        };
        self.noted(id, overloads::check(func, target, &prims).map(drop))
    }

    /// Notes a call no overload takes (its message, and the token cel-go points at); false
    /// when it is one.
    fn noted(&mut self, id: u64, checked: Result<(), (String, Token)>) -> bool {
        match checked {
            Ok(()) => true,
            Err((message, token)) => {
                self.issues.push(Issue { id, message, token });
                false
            }
        }
    }

    /// The accumulator's type as the comprehension's result reads it.
    fn var_in_result(&self, c: &kube_cel::cel::common::ast::ComprehensionExpr) -> Ty<'d> {
        self.types
            .get(&c.loop_step.id)
            .filter(|t| !t.is_dyn())
            .or_else(|| self.types.get(&c.accu_init.id))
            .cloned()
            .unwrap_or(Ty::Dyn)
    }
}

/// The one type of all of `tys`, or dyn.
fn common(tys: Vec<Ty<'_>>) -> Ty<'_> {
    let mut it = tys.into_iter();
    let Some(first) = it.next() else {
        return Ty::Dyn;
    };
    if it.all(|t| t == first) {
        first
    } else {
        Ty::Dyn
    }
}

/// The result type of calling `func`.
fn call<'d>(func: &str, target: Option<&Ty<'d>>, args: &[Ty<'d>]) -> Ty<'d> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Ty::Dyn);
    match func {
        "_&&_"
        | "_||_"
        | "!_"
        | "@not_strictly_false"
        | "_==_"
        | "_!=_"
        | "_<_"
        | "_<=_"
        | "_>_"
        | "_>=_"
        | "@in"
        | "contains"
        | "startsWith"
        | "endsWith"
        | "matches"
        | "isSorted"
        | "containsIP"
        | "containsCIDR"
        | "allowed"
        | "errored"
        | "bool"
        | "hasValue"
        | "sets.contains"
        | "sets.equivalent"
        | "sets.intersects" => Ty::Bool,
        f if f.starts_with("is") && f[2..].starts_with(|c: char| c.is_ascii_uppercase()) => {
            Ty::Bool
        }
        "_?_:_" => {
            let (a, b) = (arg(1), arg(2));
            let any_list = Ty::List(Box::new(Ty::Dyn));
            if a == b || b == Ty::Null || (a.is_list() && b == any_list) {
                a
            } else if a == Ty::Null || (b.is_list() && a == any_list) {
                b
            } else {
                Ty::Dyn
            }
        }
        "_[_]" => match arg(0) {
            Ty::List(e) => *e,
            Ty::Map(_, v) => *v,
            _ => Ty::Dyn,
        },
        "_+_" | "_-_" | "_*_" | "_/_" | "_%_" => arith(func, arg(0), arg(1)),
        "-_" => arg(0),
        "size" | "int" | "indexOf" | "lastIndexOf" | "compareTo" | "sign" | "asInteger"
        | "prefixLength" | "family" | "major" | "minor" | "patch" => Ty::Int,
        f if f.starts_with("get") && !matches!(f, "getQuery") && target_is_time(target) => Ty::Int,
        "uint" => Ty::Uint,
        "double" | "asApproximateFloat" => Ty::Double,
        "string"
        | "lowerAscii"
        | "upperAscii"
        | "trim"
        | "replace"
        | "substring"
        | "format"
        | "join"
        | "charAt"
        | "find"
        | "getScheme"
        | "getHost"
        | "getHostname"
        | "getEscapedPath"
        | "getPort"
        | "reason"
        | "error"
        | "strings.quote"
        | "base64.encode"
        | "jsonpatch.escapeKey" => Ty::String,
        "bytes" | "base64.decode" => Ty::Bytes,
        "duration" => Ty::Duration,
        "timestamp" => Ty::Timestamp,
        "type" => Ty::Type,
        "split" | "findAll" => Ty::List(Box::new(Ty::String)),
        "getQuery" => Ty::Map(
            Box::new(Ty::String),
            Box::new(Ty::List(Box::new(Ty::String))),
        ),
        "quantity" => Ty::Library("quantity"),
        "add" | "sub" if target == Some(&Ty::Library("quantity")) => Ty::Library("quantity"),
        "url" => Ty::Library("url"),
        "ip" => Ty::Library("ip"),
        "cidr" | "masked" => Ty::Library("cidr"),
        "semver" => Ty::Library("semver"),
        "sum" | "max" | "min" => match target {
            Some(Ty::List(e)) => (**e).clone(),
            _ => Ty::Dyn,
        },
        "optional.of" | "optional.ofNonZeroValue" => Ty::Optional(Box::new(arg(0))),
        "optional.none" => Ty::Optional(Box::new(Ty::Dyn)),
        "orValue" | "value" => match target {
            Some(Ty::Optional(t)) => (**t).clone(),
            _ => Ty::Dyn,
        },
        _ => Ty::Dyn,
    }
}

fn target_is_time(target: Option<&Ty<'_>>) -> bool {
    matches!(target, Some(Ty::Timestamp | Ty::Duration | Ty::Dyn))
}

fn arith<'d>(func: &str, a: Ty<'d>, b: Ty<'d>) -> Ty<'d> {
    match (a, b) {
        (Ty::Dyn, b) => b,
        (Ty::Timestamp, Ty::Timestamp) if func == "_-_" => Ty::Duration,
        (Ty::Duration, Ty::Timestamp) => Ty::Timestamp,
        (Ty::List(x), Ty::List(y)) if x.is_dyn() => Ty::List(y),
        (a, _) => a,
    }
}

/// What checking an expression against the declared type of `self` finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    /// Undefined fields or undeclared identifiers, in cel-go's text.
    Issues(String),
    /// The expression is known to return another type than the one wanted.
    WrongType,
}

/// Checks parsed `expr` (whose text is `source`) with `self` and `oldSelf` of declared type
/// `root` (`oldSelf` an optional of it with `optional_old_self`), wanting a result of type
/// `want`.
pub(crate) fn check(
    source: &str,
    expr: &IdedExpr,
    root: &Decl,
    optional_old_self: bool,
    want: &Ty<'_>,
) -> Option<Problem> {
    let old = if optional_old_self {
        Ty::Optional(Box::new(Ty::of(root)))
    } else {
        Ty::of(root)
    };
    let vars = vec![
        ("self".to_string(), Ty::of(root)),
        ("oldSelf".to_string(), old),
    ];
    let mut typer = Typer::new(vars);
    let t = typer.infer(expr);
    if let Some(text) = super::issues::render(source, std::mem::take(&mut typer.issues)) {
        return Some(Problem::Issues(text));
    }
    (!t.is_dyn() && t != *want).then_some(Problem::WrongType)
}
