//! The preloaded heap: memory filled before the workers are forked, so it starts shared
//! copy-on-write, like modules preloaded into a mod_perl parent. Requests dirty its pages one
//! by one; each dirtied page becomes private to the worker that wrote it.

use std::ptr::NonNull;

use nix::sys::mman::{MapFlags, MmapAdvise, ProtFlags, madvise, mmap_anonymous};

/// Bytes per page: the unit copy-on-write unshares (huge pages are turned off).
pub const PAGE: usize = 4096;

/// The parent's preloaded memory, inherited by every worker.
pub struct Heap {
    base: Option<NonNull<u8>>,
    pages: usize,
}

impl Heap {
    /// Maps and fills `mb` MiB (0: no heap).
    pub fn preload(mb: usize) -> anyhow::Result<Heap> {
        let Some(size) = std::num::NonZeroUsize::new(mb * 1024 * 1024) else {
            return Ok(Heap { base: None, pages: 0 });
        };
        // SAFETY: a fresh private anonymous mapping that only this module touches.
        let base = unsafe {
            let p = mmap_anonymous(None, size, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE, MapFlags::MAP_PRIVATE)?;
            // 4 KiB pages, so a write unshares 4 KiB and not a 2 MiB huge page.
            let _ = madvise(p, size.get(), MmapAdvise::MADV_NOHUGEPAGE);
            p.cast::<u8>()
        };
        // Non-zero data, so every page is resident and distinct from the zero page.
        // SAFETY: `size` bytes were just mapped writable.
        let bytes = unsafe { std::slice::from_raw_parts_mut(base.as_ptr(), size.get()) };
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i as u8) ^ 0x5a;
        }
        Ok(Heap { base: Some(base), pages: size.get() / PAGE })
    }

    /// Size of the heap in pages (0 without one).
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// Writes one byte into page `index` (mod the page count), making it private.
    pub fn dirty(&self, index: usize) {
        if let Some(base) = self.base {
            let offset = (index % self.pages) * PAGE;
            // SAFETY: offset is inside the mapping; volatile so the write is not elided.
            unsafe {
                let p = base.as_ptr().add(offset);
                p.write_volatile(p.read_volatile().wrapping_add(1));
            }
        }
    }
}

/// Visits every page once, in a scattered order, before any page twice: a worker's private
/// memory then grows by exactly the pages it dirties until the whole heap is private.
pub struct PageWalk {
    next: usize,
    stride: usize,
    pages: usize,
}

impl PageWalk {
    /// `seed` differs per worker so workers dirty different pages.
    pub fn new(pages: usize, seed: u64) -> PageWalk {
        let pages = pages.max(1);
        // A stride coprime with the page count makes `start + k * stride` a permutation.
        let mut stride = (pages / 2 + 1 + (seed as usize % pages.max(2))) % pages;
        while gcd(stride.max(1), pages) != 1 {
            stride += 1;
        }
        PageWalk { next: seed as usize % pages, stride: stride.max(1), pages }
    }

    /// The index of the page to dirty next.
    pub fn next_page(&mut self) -> usize {
        let p = self.next;
        self.next = (self.next + self.stride) % self.pages;
        p
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_visits_every_page_once_per_round() {
        for pages in [1, 2, 7, 16, 100, 16384] {
            for seed in [0, 1, 12345] {
                let mut w = PageWalk::new(pages, seed);
                let mut seen = vec![false; pages];
                for _ in 0..pages {
                    let p = w.next_page();
                    assert!(!seen[p], "page {p} twice in one round ({pages} pages, seed {seed})");
                    seen[p] = true;
                }
            }
        }
    }
}
