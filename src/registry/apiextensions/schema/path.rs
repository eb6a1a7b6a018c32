//! Where a walk is in the object, kept on the stack (a linked list of borrowed segments) so a
//! walk allocates nothing per field; the text is built only when an error or an unknown field
//! needs it. Upstream spells one position three ways, each rendered here:
//! kube-openapi's error names (`spec.x`, `.key` for an additionalProperties key at the root),
//! field.Path (`spec.map[key]`) and the pruning paths of fieldValidation (`spec.map.key`).
//! May use: nothing internal.

use std::fmt::Write as _;

/// One step down.
#[derive(Clone, Copy)]
pub(super) enum Seg<'a> {
    /// A property of the schema's `properties`.
    Prop(&'a str),
    /// A key under `additionalProperties`.
    Key(&'a str),
    /// An array index.
    Index(usize),
}

/// A position: the steps from the root, innermost last.
#[derive(Clone, Copy)]
pub(super) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    seg: Option<Seg<'a>>,
}

impl<'a> Path<'a> {
    /// The root.
    pub(super) const ROOT: Path<'static> = Path {
        parent: None,
        seg: None,
    };

    /// One step below `self`.
    pub(super) fn child(&'a self, seg: Seg<'a>) -> Path<'a> {
        Path {
            parent: Some(self),
            seg: Some(seg),
        }
    }

    /// Whether this is the root.
    pub(super) fn is_root(&self) -> bool {
        self.seg.is_none()
    }

    fn for_each(&self, f: &mut impl FnMut(Seg<'a>)) {
        if let Some(p) = self.parent {
            p.for_each(f);
        }
        if let Some(s) = self.seg {
            f(s);
        }
    }

    /// kube-openapi's name: `a.b`, `a[0]`, additionalProperties keys always after a dot.
    pub(super) fn openapi(&self) -> String {
        super::probe::allocates();
        let mut out = String::new();
        self.for_each(&mut |s| match s {
            Seg::Prop(n) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(n);
            }
            Seg::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Seg::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        });
        out
    }

    /// kube-openapi's name of `key` below this position (`required`, forbidden properties).
    pub(super) fn openapi_key(&self, key: &str) -> String {
        let mut out = self.openapi();
        out.push('.');
        out.push_str(key);
        out
    }

    /// field.Path's text: `a.b`, `a[key]`, `a[0]`; None at the root (a nil path).
    pub(super) fn field(&self) -> Option<String> {
        super::probe::allocates();
        if self.is_root() {
            return None;
        }
        let mut out = String::new();
        self.for_each(&mut |s| match s {
            Seg::Prop(n) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(n);
            }
            Seg::Key(k) => {
                let _ = write!(out, "[{k}]");
            }
            Seg::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        });
        Some(out)
    }

    /// field.Path's text of `name` below this position.
    pub(super) fn field_child(&self, name: &str) -> String {
        match self.field() {
            Some(mut p) => {
                p.push('.');
                p.push_str(name);
                p
            }
            None => name.to_string(),
        }
    }

    /// The pruning path (UnknownFieldPathOptions): keys after a dot, `[i]` for indices.
    pub(super) fn pruning(&self) -> String {
        super::probe::allocates();
        let mut out = String::new();
        self.for_each(&mut |s| match s {
            Seg::Prop(n) | Seg::Key(n) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(n);
            }
            Seg::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        });
        out
    }

    /// The pruning path of `key` below this position.
    pub(super) fn pruning_key(&self, key: &str) -> String {
        let mut out = self.pruning();
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(key);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_position_three_spellings() {
        let root = Path::ROOT;
        let m = root.child(Seg::Prop("spec"));
        let k = m.child(Seg::Key("a.b"));
        let i = k.child(Seg::Index(2));
        assert_eq!(i.openapi(), "spec.a.b[2]");
        assert_eq!(i.field().unwrap(), "spec[a.b][2]");
        assert_eq!(i.pruning(), "spec.a.b[2]");
        let top = root.child(Seg::Key("x"));
        assert_eq!(top.openapi(), ".x");
        assert_eq!(top.field().unwrap(), "[x]");
        assert_eq!(top.pruning_key("y"), "x.y");
        assert_eq!(root.openapi_key("spec"), ".spec");
        assert_eq!(root.field(), None);
    }
}
