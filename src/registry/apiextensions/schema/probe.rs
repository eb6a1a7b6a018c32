//! A test-only count of the places where applying a schema allocates (rendering a path or a
//! message, copying a default, reading embedded metadata, hashing a long list). A valid,
//! already pruned and defaulted object must reach none of them; the crate forbids `unsafe`,
//! so a counting global allocator is not an option and the walk reports its own allocation
//! sites instead. Outside tests this is nothing. May use: nothing internal.

#[cfg(test)]
thread_local! {
    static SITES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Marks an allocation site as reached.
#[inline(always)]
pub(super) fn allocates() {
    #[cfg(test)]
    SITES.with(|c| c.set(c.get() + 1));
}

/// How many allocation sites `f` reached on this thread.
#[cfg(test)]
pub(super) fn sites_reached(f: impl FnOnce()) -> usize {
    let before = SITES.with(std::cell::Cell::get);
    f();
    SITES.with(std::cell::Cell::get) - before
}
