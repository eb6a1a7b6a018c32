//! Names in expressions: the words CEL reserves, the names its libraries declare, and
//! finding or replacing references to a variable.

use super::visit;
use kube_cel::cel::common::ast::{Expr, IdedExpr};

/// CEL's reserved words (the lexer's RESERVED symbols): no identifier may be one.
pub(crate) const RESERVED_WORDS: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Names CEL and Kubernetes' libraries declare besides variables: type names, and the
/// namespaces of qualified functions (`optional.none()`, `sets.contains(...)`,
/// `format.dns1123Label()`...), which the parser reads as identifiers.
pub(crate) const DECLARED_NAMES: [&str; 20] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "optional",
    "math",
    "strings",
    "sets",
    "format",
    "base64",
    "lists",
    "jsonpatch",
    "cel",
    "ip",
];

/// Whether `expr` names the variable `name`.
pub(crate) fn references(expr: &IdedExpr, name: &str) -> bool {
    let mut found = false;
    visit(expr, &mut |e| {
        found |= matches!(&e.expr, Expr::Ident(n) if n == name)
    });
    found
}
