//! Content-defined chunking (FastCDC): where a file's bytes are cut into
//! chunks. The cut points depend only on the content, so an edit moves only
//! the chunks around it and every replica cuts the same bytes the same way:
//! that is what lets chunks be shared between versions and between replicas.

use std::io::Read;
use std::sync::Arc;

use fastcdc::v2020::FastCDC;
use serde::{Deserialize, Serialize};

/// FastCDC v2020 parameters. Fixed at `init`: every replica must cut the same
/// boundaries or dedup between them breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkParams {
    /// No cut before this many bytes (but the last chunk of a file may be shorter).
    pub min: u32,
    /// The size cuts aim at on average.
    pub avg: u32,
    /// A chunk is cut here at the latest.
    pub max: u32,
}

// Every chunk fits in one object: `validate` caps `max` at fastcdc's largest.
const _: () = assert!(fastcdc::v2020::MAXIMUM_MAX as usize <= crate::object::MAX_OBJECT_SIZE);

impl Default for ChunkParams {
    fn default() -> Self {
        ChunkParams {
            min: 16 * 1024,
            avg: 64 * 1024,
            max: 256 * 1024,
        }
    }
}

impl ChunkParams {
    /// The ranges fastcdc accepts (it asserts on anything else).
    pub fn validate(&self) -> Result<(), String> {
        use fastcdc::v2020::*;
        if !(MINIMUM_MIN..=MINIMUM_MAX).contains(&self.min)
            || !(AVERAGE_MIN..=AVERAGE_MAX).contains(&self.avg)
            || !(MAXIMUM_MIN..=MAXIMUM_MAX).contains(&self.max)
            || self.min > self.avg
            || self.avg > self.max
        {
            return Err(format!(
                "chunk sizes min {} avg {} max {} are invalid: need {MINIMUM_MIN} <= min <= avg <= max <= {MAXIMUM_MAX}, avg >= {AVERAGE_MIN}",
                self.min, self.avg, self.max
            ));
        }
        Ok(())
    }
}

/// Reads a file expected to fit in one chunk (at most `params.min` bytes).
/// Returns None when it holds more, so the caller can chunk it instead.
pub(crate) fn read_single_chunk(
    f: &mut impl Read,
    params: ChunkParams,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut data = Vec::new();
    f.take(params.min as u64 + 1).read_to_end(&mut data)?;
    Ok((data.len() <= params.min as usize).then_some(data))
}

/// Cuts `data[from..]` into chunks; unless `eof`, stops where less than a
/// maximum chunk is left (its end depends on bytes not read yet). Returns the
/// chunks' ranges and where the uncut rest begins.
pub(crate) fn cut_run(
    data: &[u8],
    from: usize,
    params: ChunkParams,
    eof: bool,
) -> (Vec<std::ops::Range<usize>>, usize) {
    let mut cuts = Vec::new();
    let mut pos = from;
    while pos < data.len() && (eof || data.len() - pos >= params.max as usize) {
        let window = &data[pos..];
        let cdc = FastCDC::new(window, params.min, params.avg, params.max);
        let (_, cut) = cdc.cut(0, window.len());
        let cut = if cut == 0 { window.len() } else { cut };
        cuts.push(pos..pos + cut);
        pos += cut;
    }
    (cuts, pos)
}

/// Consecutive chunks of a file, as ranges of one shared buffer.
pub struct ChunkBatch {
    /// The bytes the chunks are cut from.
    pub data: Arc<Vec<u8>>,
    /// Each chunk's range in `data`, in file order.
    pub cuts: Vec<std::ops::Range<usize>>,
}

impl ChunkBatch {
    /// A batch of one chunk holding all of `data` (a file no larger than a chunk).
    // One range covering the whole buffer, not a vector of its bytes.
    #[allow(clippy::single_range_in_vec_init)]
    pub fn single(data: Vec<u8>) -> ChunkBatch {
        let len = data.len();
        ChunkBatch {
            data: Arc::new(data),
            cuts: vec![0..len],
        }
    }

    /// The bytes of chunk `i`; panics if there are not that many.
    pub fn chunk(&self, i: usize) -> &[u8] {
        &self.data[self.cuts[i].clone()]
    }
}

/// Streams content-defined chunks out of a reader with one reusable buffer,
/// so memory stays a few MiB whatever the input size.
pub struct Chunker<R> {
    source: R,
    params: ChunkParams,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
}

const BUFFER: usize = 4 * 1024 * 1024;

impl<R: Read> Chunker<R> {
    /// A chunker over `source`; `params` must have passed [`ChunkParams::validate`]
    /// (fastcdc panics on others).
    pub fn new(source: R, params: ChunkParams) -> Self {
        let size = BUFFER.max(params.max as usize * 2);
        Chunker {
            source,
            params,
            buf: vec![0; size],
            start: 0,
            end: 0,
            eof: false,
        }
    }

    fn fill(&mut self) -> std::io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        while !self.eof && self.end < self.buf.len() {
            match self.source.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The next chunk, or None at the end of the input.
    pub fn next_chunk(&mut self) -> std::io::Result<Option<&[u8]>> {
        if !self.eof && self.end - self.start < self.params.max as usize {
            self.fill()?;
        }
        let remaining = self.end - self.start;
        if remaining == 0 {
            return Ok(None);
        }
        let window = &self.buf[self.start..self.end];
        let cdc = FastCDC::new(window, self.params.min, self.params.avg, self.params.max);
        let (_, cut) = cdc.cut(0, remaining);
        let cut = if cut == 0 { remaining } else { cut };
        let chunk = &self.buf[self.start..self.start + cut];
        self.start += cut;
        Ok(Some(chunk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks_of(data: &[u8], params: ChunkParams) -> Vec<Vec<u8>> {
        chunks_and_fills(data, params).0
    }

    use dmv_testkit::noise;

    /// Records where each `read` of the source ended (input offsets): the
    /// ends of the chunker's buffer fills.
    struct Reads<'a> {
        data: &'a [u8],
        pos: usize,
        ends: std::rc::Rc<std::cell::RefCell<Vec<usize>>>,
    }

    impl Read for Reads<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.data.len() - self.pos);
            buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            if n > 0 {
                self.ends.borrow_mut().push(self.pos);
            }
            Ok(n)
        }
    }

    /// The chunks, and the input offsets where a buffer fill ended before
    /// the end of the input (a chunk spanning one was cut after a refill).
    fn chunks_and_fills(data: &[u8], params: ChunkParams) -> (Vec<Vec<u8>>, Vec<usize>) {
        let ends = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut c = Chunker::new(
            Reads {
                data,
                pos: 0,
                ends: ends.clone(),
            },
            params,
        );
        let mut out = Vec::new();
        while let Some(ch) = c.next_chunk().unwrap() {
            out.push(ch.to_vec());
        }
        let fills = ends
            .borrow()
            .iter()
            .copied()
            .filter(|&e| e < data.len())
            .collect();
        (out, fills)
    }

    /// Chunk boundaries as input offsets (start, end).
    fn spans(lens: impl IntoIterator<Item = usize>) -> Vec<(usize, usize)> {
        let mut at = 0;
        lens.into_iter()
            .map(|l| {
                at += l;
                (at - l, at)
            })
            .collect()
    }

    /// Most chunks end at a content-defined cut, not at the maximum size.
    fn assert_mostly_content_defined(lens: &[usize], p: ChunkParams) {
        let short = lens.iter().filter(|&&l| l < p.max as usize).count();
        assert!(
            short * 4 >= lens.len() * 3,
            "only {short} of {} chunks are shorter than max: {lens:?}",
            lens.len()
        );
    }

    #[test]
    fn chunks_concatenate_to_input_and_respect_bounds() {
        let data = noise(6_000_000, 1);
        let p = ChunkParams::default();
        let (chunks, fills) = chunks_and_fills(&data, p);
        assert_eq!(chunks.concat(), data);
        for c in &chunks[..chunks.len() - 1] {
            assert!(
                c.len() >= p.min as usize && c.len() <= p.max as usize,
                "{}",
                c.len()
            );
        }
        assert!(chunks.len() > 3);
        let lens: Vec<usize> = chunks.iter().map(|c| c.len()).collect();
        assert_mostly_content_defined(&lens, p);
        // Average size near avg (64 KiB): far more chunks than 6 MB / max.
        assert!(
            chunks.len() > 3 * data.len() / p.max as usize,
            "{} chunks",
            chunks.len()
        );
        // The input is larger than the buffer: at least one chunk began
        // before a refill and ended after it.
        assert!(
            !fills.is_empty(),
            "the input never needed a second buffer fill"
        );
        let sp = spans(lens);
        assert!(
            fills
                .iter()
                .all(|&f| sp.iter().any(|&(s, e)| s < f && f < e)),
            "no chunk spans a buffer refill at {fills:?}"
        );
    }

    #[test]
    fn matches_fastcdc_on_whole_buffer() {
        let data = noise(9_000_000, 2);
        let p = ChunkParams::default();
        let (chunks, fills) = chunks_and_fills(&data, p);
        let ours: Vec<usize> = chunks.iter().map(|c| c.len()).collect();
        let theirs: Vec<usize> = FastCDC::new(&data, p.min, p.avg, p.max)
            .map(|c| c.length)
            .collect();
        assert_eq!(ours, theirs);
        assert_mostly_content_defined(&ours, p);
        assert!(fills.len() >= 2, "buffer fills ended at {fills:?}");
        let sp = spans(ours.iter().copied());
        for f in &fills {
            assert!(
                sp.iter().any(|&(s, e)| s < *f && *f < e),
                "no chunk spans the buffer refill at {f}"
            );
        }
    }

    #[test]
    fn empty_input_has_no_chunks() {
        assert!(chunks_of(&[], ChunkParams::default()).is_empty());
    }
}
