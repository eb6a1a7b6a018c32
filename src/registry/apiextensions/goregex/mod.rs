//! Go's regular expressions (RE2 syntax with Perl extensions), as CRD patterns use them:
//! whether a pattern compiles, with Go's error text ([`check`], for CRD validation), and the
//! pattern compiled with the regex crate to match values ([`compile`], for custom objects).
//! May use: nothing internal.

mod check;
#[cfg(test)]
mod check_tests;
mod translate;
#[cfg(test)]
mod translate_tests;

pub(super) use check::check;
pub(super) use translate::compile;
