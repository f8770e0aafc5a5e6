//! [`Collectives`]: how the processes that write one archive together
//! talk (MPI, in gputrace: see its `merge --mpi`), and byte-vector helpers
//! over it. The crate knows nothing of MPI: OTF2's collective callbacks
//! and the exchanges of [`ArchiveWriter::close`](crate::ArchiveWriter::close)
//! go through this trait.

use crate::error::{Error, Result};

/// Collective operations on bytes among the `size()` processes that write
/// one archive, the contract of OTF2's collective callbacks
/// (`OTF2_Callbacks.h`): every process calls the same operation in the same
/// order; `root`'s buffers are the only ones read (`bcast`, `scatter*`) or
/// written (`gather*`) beyond the process's own piece. Each returns whether
/// it succeeded.
pub trait Collectives: Send + Sync {
    /// This process's rank, `0..size()`.
    fn rank(&self) -> u32;
    /// The number of processes.
    fn size(&self) -> u32;
    fn barrier(&self) -> bool;
    /// `data` (the same length everywhere) from `root` to every process.
    fn bcast(&self, data: &mut [u8], root: u32) -> bool;
    /// Every process's `input` (the same length everywhere) into `output`
    /// at `root`, in rank order (`output` is empty elsewhere).
    fn gather(&self, input: &[u8], output: &mut [u8], root: u32) -> bool;
    /// As `gather`, with `counts[r]` bytes from rank `r` (`counts` is given
    /// at `root` only).
    fn gatherv(&self, input: &[u8], output: &mut [u8], counts: &[usize], root: u32) -> bool;
    /// `input` at `root`, cut into `size()` equal pieces, the `r`-th to
    /// rank `r`'s `output`.
    fn scatter(&self, input: &[u8], output: &mut [u8], root: u32) -> bool;
    /// As `scatter`, with `counts[r]` bytes to rank `r` (`counts` is given
    /// at `root` only).
    fn scatterv(&self, input: &[u8], counts: &[usize], output: &mut [u8], root: u32) -> bool;
}

fn failed(what: &'static str) -> Error {
    Error::Collective { what }
}

/// Every process's `bytes` at `root`, by rank (empty elsewhere).
///
/// # Errors
///
/// A collective operation that failed.
pub fn gather_bytes(comm: &dyn Collectives, bytes: &[u8], root: u32) -> Result<Vec<Vec<u8>>> {
    let size = comm.size() as usize;
    let here = comm.rank() == root;
    let len = (bytes.len() as u64).to_le_bytes();
    let mut lens = vec![0u8; if here { 8 * size } else { 0 }];
    if !comm.gather(&len, &mut lens, root) {
        return Err(failed("gathering lengths"));
    }
    let counts: Vec<usize> = lens.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap()) as usize).collect();
    let mut all = vec![0u8; counts.iter().sum()];
    if !comm.gatherv(bytes, &mut all, &counts, root) {
        return Err(failed("gathering bytes"));
    }
    let mut out = Vec::with_capacity(counts.len());
    let mut at = 0;
    for c in counts {
        out.push(all[at..at + c].to_vec());
        at += c;
    }
    Ok(out)
}

/// `parts[r]` (given at `root`) to rank `r`: this process's part.
///
/// # Errors
///
/// A collective operation that failed, or `parts` not one per process.
pub fn scatter_bytes(comm: &dyn Collectives, parts: &[Vec<u8>], root: u32) -> Result<Vec<u8>> {
    let size = comm.size() as usize;
    let here = comm.rank() == root;
    if here && parts.len() != size {
        return Err(failed("scattering: not one part per process"));
    }
    let lens: Vec<u8> =
        if here { parts.iter().flat_map(|p| (p.len() as u64).to_le_bytes()).collect() } else { Vec::new() };
    let mut len = [0u8; 8];
    if !comm.scatter(&lens, &mut len, root) {
        return Err(failed("scattering lengths"));
    }
    let counts: Vec<usize> = if here { parts.iter().map(Vec::len).collect() } else { Vec::new() };
    let all: Vec<u8> = if here { parts.concat() } else { Vec::new() };
    let mut mine = vec![0u8; u64::from_le_bytes(len) as usize];
    if !comm.scatterv(&all, &counts, &mut mine, root) {
        return Err(failed("scattering bytes"));
    }
    Ok(mine)
}

/// `bytes` of `root` on every process.
///
/// # Errors
///
/// A collective operation that failed.
pub fn bcast_bytes(comm: &dyn Collectives, bytes: &[u8], root: u32) -> Result<Vec<u8>> {
    let mut len = (bytes.len() as u64).to_le_bytes();
    if !comm.bcast(&mut len, root) {
        return Err(failed("broadcasting a length"));
    }
    let mut out = if comm.rank() == root { bytes.to_vec() } else { vec![0u8; u64::from_le_bytes(len) as usize] };
    if !comm.bcast(&mut out, root) {
        return Err(failed("broadcasting bytes"));
    }
    Ok(out)
}

/// A little-endian writer and reader of the exchanged records.
#[derive(Default)]
pub(crate) struct Wire(pub(crate) Vec<u8>);

impl Wire {
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn text(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
}

pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl Reader<'_> {
    pub(crate) fn u64(&mut self) -> Result<u64> {
        if self.0.len() < 8 {
            return Err(failed("reading an exchanged record: too short"));
        }
        let (head, rest) = self.0.split_at(8);
        self.0 = rest;
        Ok(u64::from_le_bytes(head.try_into().expect("8 bytes")))
    }
    pub(crate) fn text(&mut self) -> Result<String> {
        let len = self.u64()? as usize;
        if self.0.len() < len {
            return Err(failed("reading an exchanged record: too short"));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(String::from_utf8_lossy(head).into_owned())
    }
}
