//! Lazy flattening of a [`Datatype`] into byte runs.
//!
//! A datatype is compiled once into a small *plan*: a tree whose size is that of
//! the datatype's description (one node per constructor, per darray dimension
//! and per struct field), never that of its type map. Leaves are contiguous runs;
//! inner nodes repeat a child at a stride, list children at displacements, or
//! walk an `Hindexed` block list borrowed from the datatype. A [`Cursor`] walks
//! the plan depth-first with an explicit stack, so iterating a 3-D subarray with
//! 10^7 rows costs O(depth) memory. While compiling, a repetition of a run whose
//! stride equals its length collapses into one longer run, so a row of a
//! subarray is one step of the walk, not one step per element.
//!
//! The same plan answers `extent_count` structurally: each node summarises its
//! merged runs as (count, start of the first, end of the last), and two
//! consecutive pieces merge exactly when one ends where the next starts.

use crate::datatype::{Datatype, DimRuns, Order};

/// One node of a compiled plan; children are indices into [`Plan::nodes`].
#[derive(Debug, Clone)]
enum Node<'a> {
    /// Bytes `[disp, disp + len)`, `len > 0`.
    Run { disp: i64, len: u64 },
    /// `count` copies of `child`, copy `i` shifted by `disp + i * stride`.
    Repeat {
        disp: i64,
        count: u64,
        stride: i64,
        child: usize,
    },
    /// Children in order, each shifted by its displacement.
    List { parts: Vec<(i64, usize)> },
    /// `MPI_Type_create_hindexed`: block `(d, n)` is `n` copies of `child` at
    /// `d + j * stride`; blocks with `n == 0` hold nothing.
    Hindexed {
        blocks: &'a [(i64, u64)],
        stride: i64,
        child: usize,
    },
}

/// A compiled datatype: nodes plus the data size of each node.
#[derive(Debug, Clone)]
pub(crate) struct Plan<'a> {
    nodes: Vec<Node<'a>>,
    sizes: Vec<u64>,
    /// `None` when the datatype holds no data.
    root: Option<usize>,
}

/// Merged-run summary of a node: number of merged runs, start of the first,
/// end of the last.
#[derive(Debug, Clone, Copy)]
struct Summary {
    n: u64,
    first: i64,
    last_end: i64,
}

impl Summary {
    /// `self` followed by `next`: they merge where `self` ends at `next`'s start.
    fn then(self, next: Summary) -> Summary {
        let merge = u64::from(self.last_end == next.first);
        Summary {
            n: self.n + next.n - merge,
            first: self.first,
            last_end: next.last_end,
        }
    }

    fn shifted(self, by: i64) -> Summary {
        Summary {
            n: self.n,
            first: self.first + by,
            last_end: self.last_end + by,
        }
    }

    /// `count >= 1` copies at `disp + i * stride`.
    fn repeated(self, disp: i64, count: u64, stride: i64) -> Summary {
        let merge = u64::from(self.last_end == stride + self.first);
        Summary {
            n: count * self.n - (count - 1) * merge,
            first: disp + self.first,
            last_end: disp + (count as i64 - 1) * stride + self.last_end,
        }
    }
}

impl<'a> Plan<'a> {
    /// Compiles `t`. Panics with the validation message if `t` is a darray
    /// whose parameters `Datatype::validate` rejects.
    pub(crate) fn new(t: &'a Datatype) -> Plan<'a> {
        let mut p = Plan {
            nodes: Vec::new(),
            sizes: Vec::new(),
            root: None,
        };
        p.root = p.build(t);
        p
    }

    /// The root node when it is one contiguous run: `(disp, len)`.
    pub(crate) fn single_run(&self) -> Option<(i64, u64)> {
        match self.root.map(|r| &self.nodes[r]) {
            Some(Node::Run { disp, len }) => Some((*disp, *len)),
            _ => None,
        }
    }

    /// Number of merged runs of one instance, from the node summaries.
    pub(crate) fn merged_count(&self) -> u64 {
        let mut memo = vec![None; self.nodes.len()];
        self.root.map_or(0, |r| self.summary(r, &mut memo).n)
    }

    fn push(&mut self, node: Node<'a>, size: u64) -> usize {
        self.nodes.push(node);
        self.sizes.push(size);
        self.nodes.len() - 1
    }

    fn run(&mut self, disp: i64, len: u64) -> Option<usize> {
        (len > 0).then(|| self.push(Node::Run { disp, len }, len))
    }

    /// `child` shifted by `by` bytes.
    fn shift(&mut self, child: usize, by: i64) -> usize {
        if by == 0 {
            return child;
        }
        let size = self.sizes[child];
        match self.nodes[child] {
            Node::Run { disp, len } => self.push(
                Node::Run {
                    disp: disp + by,
                    len,
                },
                size,
            ),
            Node::Repeat {
                disp,
                count,
                stride,
                child: c,
            } => self.push(
                Node::Repeat {
                    disp: disp + by,
                    count,
                    stride,
                    child: c,
                },
                size,
            ),
            _ => self.push(
                Node::List {
                    parts: vec![(by, child)],
                },
                size,
            ),
        }
    }

    /// `count` copies of `child` at `disp + i * stride`, collapsed into one run
    /// where the copies abut.
    fn repeat(
        &mut self,
        disp: i64,
        count: u64,
        stride: i64,
        child: Option<usize>,
    ) -> Option<usize> {
        let child = child?;
        match count {
            0 => None,
            1 => Some(self.shift(child, disp)),
            _ => {
                if let Node::Run { disp: d, len } = self.nodes[child]
                    && stride == len as i64
                {
                    return self.run(disp + d, count * len);
                }
                let size = count * self.sizes[child];
                Some(self.push(
                    Node::Repeat {
                        disp,
                        count,
                        stride,
                        child,
                    },
                    size,
                ))
            }
        }
    }

    /// Concatenation of `parts` (already shifted) in order.
    fn list(&mut self, parts: Vec<usize>) -> Option<usize> {
        match parts.len() {
            0 => None,
            1 => Some(parts[0]),
            _ => {
                let size = parts.iter().map(|&p| self.sizes[p]).sum();
                Some(self.push(
                    Node::List {
                        parts: parts.into_iter().map(|p| (0, p)).collect(),
                    },
                    size,
                ))
            }
        }
    }

    fn build(&mut self, t: &'a Datatype) -> Option<usize> {
        match t {
            Datatype::Byte => self.run(0, 1),
            Datatype::Double => self.run(0, 8),
            Datatype::Contiguous { count, inner } => {
                let c = self.build(inner);
                self.repeat(0, *count, inner.extent() as i64, c)
            }
            Datatype::Vector {
                count,
                blocklen,
                stride,
                inner,
            } => {
                let ext = inner.extent() as i64;
                let c = self.build(inner);
                let block = self.repeat(0, *blocklen, ext, c);
                self.repeat(0, *count, stride * ext, block)
            }
            Datatype::Hvector {
                count,
                blocklen,
                stride_bytes,
                inner,
            } => {
                let ext = inner.extent() as i64;
                let c = self.build(inner);
                let block = self.repeat(0, *blocklen, ext, c);
                self.repeat(0, *count, *stride_bytes, block)
            }
            Datatype::Hindexed { blocks, inner } => {
                let ext = inner.extent() as i64;
                let child = self.build(inner)?;
                let size: u64 = blocks.iter().map(|b| b.1).sum::<u64>() * self.sizes[child];
                if size == 0 {
                    return None;
                }
                Some(self.push(
                    Node::Hindexed {
                        blocks,
                        stride: ext,
                        child,
                    },
                    size,
                ))
            }
            Datatype::Subarray {
                sizes,
                subsizes,
                starts,
                order,
                inner,
            } => self.grid(
                sizes,
                |d| DimRuns::single(starts[d], subsizes[d]),
                *order,
                inner,
            ),
            Datatype::Darray {
                gsizes,
                order,
                inner,
                ..
            } => {
                let dims = t.darray_dims().unwrap_or_else(|e| panic!("{e}"));
                self.grid(gsizes, |d| dims[d], *order, inner)
            }
            Datatype::Struct { fields } => {
                let mut parts = Vec::with_capacity(fields.len());
                for (disp, blocklen, ft) in fields {
                    let c = self.build(ft);
                    // A single block needs no stride: skip computing the extent.
                    let stride = if *blocklen > 1 { ft.extent() as i64 } else { 0 };
                    if let Some(p) = self.repeat(*disp, *blocklen, stride, c) {
                        parts.push(p);
                    }
                }
                self.list(parts)
            }
            Datatype::Resized { inner, .. } => self.build(inner),
        }
    }

    /// An array of `inner` with global sizes `sizes`, restricted per dimension
    /// `d` to the runs `dims(d)`; `order` says which dimension varies fastest.
    fn grid(
        &mut self,
        sizes: &[u64],
        dims: impl Fn(usize) -> DimRuns,
        order: Order,
        inner: &'a Datatype,
    ) -> Option<usize> {
        let ext = inner.extent() as i64;
        let mut node = self.build(inner);
        let nd = sizes.len();
        let mut stride = ext;
        for k in 0..nd {
            let d = match order {
                Order::C => nd - 1 - k,
                Order::Fortran => k,
            };
            let r = dims(d);
            let block = self.repeat(0, r.blocklen, stride, node);
            let full = self.repeat(
                r.first as i64 * stride,
                r.nfull,
                r.period as i64 * stride,
                block,
            );
            let tail_at = (r.first + r.nfull * r.period) as i64 * stride;
            let tail = self.repeat(tail_at, r.tail, stride, node);
            node = match (full, tail) {
                (Some(f), Some(t)) => self.list(vec![f, t]),
                (f, t) => f.or(t),
            };
            stride *= sizes[d] as i64;
        }
        node
    }

    fn summary(&self, i: usize, memo: &mut Vec<Option<Summary>>) -> Summary {
        if let Some(s) = memo[i] {
            return s;
        }
        let s = match &self.nodes[i] {
            Node::Run { disp, len } => Summary {
                n: 1,
                first: *disp,
                last_end: disp + *len as i64,
            },
            Node::Repeat {
                disp,
                count,
                stride,
                child,
            } => self.summary(*child, memo).repeated(*disp, *count, *stride),
            Node::List { parts } => {
                let mut acc: Option<Summary> = None;
                for &(d, c) in parts {
                    let s = self.summary(c, memo).shifted(d);
                    acc = Some(acc.map_or(s, |a| a.then(s)));
                }
                acc.expect("plan lists are never empty")
            }
            Node::Hindexed {
                blocks,
                stride,
                child,
            } => {
                let c = self.summary(*child, memo);
                let mut acc: Option<Summary> = None;
                for &(d, n) in blocks.iter().filter(|b| b.1 > 0) {
                    let s = c.repeated(d, n, *stride);
                    acc = Some(acc.map_or(s, |a| a.then(s)));
                }
                acc.expect("hindexed plan nodes hold data")
            }
        };
        memo[i] = Some(s);
        s
    }
}

/// One level of the walk: node `node` placed at `base`; `i`, `j` say where in
/// the node the walk stands (meaning depends on the node kind).
#[derive(Debug, Clone, Copy)]
struct Frame {
    node: usize,
    base: i64,
    /// Run: bytes already consumed. Repeat/List/Hindexed: next child or block.
    i: u64,
    /// Hindexed: next element of block `i` (or, for a contiguous child, bytes
    /// already consumed of block `i`).
    j: u64,
}

/// A depth-first walk over a plan, yielding unmerged runs `(disp, len)`.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    plan: Plan<'a>,
    stack: Vec<Frame>,
}

impl<'a> Cursor<'a> {
    /// A cursor that has not started; call [`Cursor::start`].
    pub(crate) fn new(plan: Plan<'a>) -> Cursor<'a> {
        Cursor {
            plan,
            stack: Vec::new(),
        }
    }

    /// Data bytes in one instance.
    pub(crate) fn instance_size(&self) -> u64 {
        self.plan.root.map_or(0, |r| self.plan.sizes[r])
    }

    /// (Re)starts the walk over one instance placed at `base`, skipping its
    /// first `skip` data bytes (`skip < instance_size()`), in O(depth) steps
    /// (plus O(entries) for list and hindexed nodes on the way down).
    pub(crate) fn start(&mut self, base: i64, skip: u64) {
        self.stack.clear();
        let Some(root) = self.plan.root else { return };
        if skip >= self.plan.sizes[root] {
            return;
        }
        let (mut node, mut base, mut skip) = (root, base, skip);
        loop {
            match &self.plan.nodes[node] {
                Node::Run { .. } => {
                    self.stack.push(Frame {
                        node,
                        base,
                        i: skip,
                        j: 0,
                    });
                    return;
                }
                Node::Repeat {
                    disp,
                    stride,
                    child,
                    ..
                } => {
                    let cs = self.plan.sizes[*child];
                    let k = skip / cs;
                    self.stack.push(Frame {
                        node,
                        base,
                        i: k + 1,
                        j: 0,
                    });
                    (node, base, skip) = (*child, base + disp + k as i64 * stride, skip % cs);
                }
                Node::List { parts } => {
                    let mut k = 0;
                    while skip >= self.plan.sizes[parts[k].1] {
                        skip -= self.plan.sizes[parts[k].1];
                        k += 1;
                    }
                    self.stack.push(Frame {
                        node,
                        base,
                        i: k as u64 + 1,
                        j: 0,
                    });
                    (node, base) = (parts[k].1, base + parts[k].0);
                }
                Node::Hindexed {
                    blocks,
                    stride,
                    child,
                } => {
                    let cs = self.plan.sizes[*child];
                    let mut k = 0;
                    while skip >= blocks[k].1 * cs {
                        skip -= blocks[k].1 * cs;
                        k += 1;
                    }
                    if self.dense(*child, *stride) {
                        self.stack.push(Frame {
                            node,
                            base,
                            i: k as u64,
                            j: skip,
                        });
                        return;
                    }
                    let e = skip / cs;
                    self.stack.push(Frame {
                        node,
                        base,
                        i: k as u64,
                        j: e + 1,
                    });
                    (node, base, skip) =
                        (*child, base + blocks[k].0 + e as i64 * stride, skip % cs);
                }
            }
        }
    }

    /// True when `child` is one run as long as `stride`: copies of it abut.
    fn dense(&self, child: usize, stride: i64) -> bool {
        matches!(self.plan.nodes[child], Node::Run { len, .. } if len as i64 == stride)
    }
}

impl Iterator for Cursor<'_> {
    type Item = (i64, u64);

    fn next(&mut self) -> Option<(i64, u64)> {
        loop {
            let top = self.stack.len().checked_sub(1)?;
            let f = self.stack[top];
            match &self.plan.nodes[f.node] {
                Node::Run { disp, len } => {
                    self.stack.pop();
                    if f.i < *len {
                        return Some((f.base + disp + f.i as i64, len - f.i));
                    }
                }
                Node::Repeat {
                    disp,
                    count,
                    stride,
                    child,
                } => {
                    if f.i >= *count {
                        self.stack.pop();
                    } else {
                        self.stack[top].i += 1;
                        let base = f.base + disp + f.i as i64 * stride;
                        self.stack.push(Frame {
                            node: *child,
                            base,
                            i: 0,
                            j: 0,
                        });
                    }
                }
                Node::List { parts } => match parts.get(f.i as usize) {
                    None => {
                        self.stack.pop();
                    }
                    Some(&(d, c)) => {
                        self.stack[top].i += 1;
                        self.stack.push(Frame {
                            node: c,
                            base: f.base + d,
                            i: 0,
                            j: 0,
                        });
                    }
                },
                Node::Hindexed {
                    blocks,
                    stride,
                    child,
                } => {
                    let Some(&(d, n)) = blocks.get(f.i as usize) else {
                        self.stack.pop();
                        continue;
                    };
                    if let Node::Run { disp: cd, len } = self.plan.nodes[*child]
                        && len as i64 == *stride
                    {
                        self.stack[top].i += 1;
                        self.stack[top].j = 0;
                        if n * len > f.j {
                            return Some((f.base + d + cd + f.j as i64, n * len - f.j));
                        }
                        continue;
                    }
                    if f.j >= n {
                        self.stack[top].i += 1;
                        self.stack[top].j = 0;
                    } else {
                        self.stack[top].j += 1;
                        let base = f.base + d + f.j as i64 * stride;
                        self.stack.push(Frame {
                            node: *child,
                            base,
                            i: 0,
                            j: 0,
                        });
                    }
                }
            }
        }
    }
}

/// Merges consecutive runs of `I` where one ends where the next starts.
#[derive(Debug, Clone)]
pub(crate) struct Merged<I> {
    inner: I,
    pending: Option<(i64, u64)>,
}

impl<I> Merged<I> {
    pub(crate) fn new(inner: I) -> Merged<I> {
        Merged {
            inner,
            pending: None,
        }
    }
}

impl<I: Iterator<Item = (i64, u64)>> Iterator for Merged<I> {
    type Item = (i64, u64);

    fn next(&mut self) -> Option<(i64, u64)> {
        loop {
            match self.inner.next() {
                None => return self.pending.take(),
                Some((d, l)) => match self.pending {
                    Some((pd, pl)) if pd + pl as i64 == d => self.pending = Some((pd, pl + l)),
                    Some(p) => {
                        self.pending = Some((d, l));
                        return Some(p);
                    }
                    None => self.pending = Some((d, l)),
                },
            }
        }
    }
}
