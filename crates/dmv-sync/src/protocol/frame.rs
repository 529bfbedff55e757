//! Framing of the sync protocol: every message and every object travels as
//! one frame, `u32 length (LE) | u8 type | body`, the same over a pipe, ssh
//! or an HTTP body. See docs/protocol.md.

use std::io::{self, Read, Write};

use dmv_repo::store::object::{check_object_len, MAX_OBJECT_SIZE};
use dmv_repo::store::{ObjectId, ObjectKind, StoredObject};
use serde::{de::DeserializeOwned, Serialize};

use crate::TransportError;
use crate::{SyncError, SyncResult, Violation};

const TYPE_MESSAGE: u8 = 1;
const TYPE_OBJECT: u8 = 2;
const TYPE_CHUNK_STUB: u8 = 3;
const TYPE_END: u8 = 4;
const TYPE_LOCATIONS: u8 = 5;

/// Bytes of an object frame's body before the payload: kind, compression, raw length, id.
const OBJECT_HEADER_LEN: usize = 1 + 1 + 4 + 32;
/// The largest frame a peer may send: a message (a long id or ref list).
pub const MAX_FRAME: usize = (64 << 20) + 1024;
/// The largest object frame: type, header and the largest object a store holds.
const MAX_OBJECT_FRAME: usize = 1 + OBJECT_HEADER_LEN + MAX_OBJECT_SIZE;
/// A frame's body is read this much at a time, so a length a peer declares
/// but does not send never sizes a buffer.
const READ_STEP: usize = 1 << 20;

/// One frame of the protocol, as read.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A request or response, postcard-encoded.
    Message(Vec<u8>),
    /// An object as a pack stores it (compressed or raw), not yet verified.
    Object(StoredObject),
    /// "This id is a chunk of this many bytes" (sent instead of the chunk while exploring).
    ChunkStub {
        /// The chunk's id.
        id: ObjectId,
        /// Its size, uncompressed, in bytes.
        raw_len: u32,
    },
    /// Ends a list of objects or of location pieces.
    End,
    /// A piece of a location log, encoded as a log of its own (formats.md).
    Locations(Vec<u8>),
}

/// Writes frames to a pipe, a stream or an HTTP body. Nothing is
/// buffered here: give it a buffered writer, and [`flush`](Self::flush)
/// at the end of a request or answer.
pub struct FrameWriter<W: Write> {
    out: W,
}

impl<W: Write> FrameWriter<W> {
    /// Frames written to `out`.
    pub fn new(out: W) -> Self {
        FrameWriter { out }
    }

    fn header(&mut self, frame_type: u8, body_len: usize) -> io::Result<()> {
        let len = u32::try_from(body_len + 1).map_err(|_| io::Error::other("frame too large"))?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(&[frame_type])
    }

    /// Writes a request or response (postcard-encoded) as a message frame.
    pub fn message<T: Serialize>(&mut self, msg: &T) -> io::Result<()> {
        let body = postcard::to_stdvec(msg).map_err(io::Error::other)?;
        self.header(TYPE_MESSAGE, body.len())?;
        self.out.write_all(&body)
    }

    /// Writes an object as it is stored, never recompressed.
    pub fn object(&mut self, obj: &StoredObject) -> io::Result<()> {
        self.header(TYPE_OBJECT, OBJECT_HEADER_LEN + obj.payload.len())?;
        let mut head = [0u8; OBJECT_HEADER_LEN];
        head[0] = obj.kind as u8;
        head[1] = obj.compression;
        head[2..6].copy_from_slice(&obj.raw_len.to_le_bytes());
        head[6..38].copy_from_slice(&obj.id.0);
        self.out.write_all(&head)?;
        self.out.write_all(&obj.payload)
    }

    /// Writes a chunk stub: "`id` is a chunk of `raw_len` bytes", in place of
    /// the chunk.
    pub fn chunk_stub(&mut self, id: &ObjectId, raw_len: u32) -> io::Result<()> {
        self.header(TYPE_CHUNK_STUB, 36)?;
        self.out.write_all(&id.0)?;
        self.out.write_all(&raw_len.to_le_bytes())
    }

    /// Writes an end frame, which closes a list of objects or of location
    /// pieces.
    pub fn end(&mut self) -> io::Result<()> {
        self.header(TYPE_END, 0)
    }

    /// Writes a piece of a location log (encoded as a log of its own) as a
    /// locations frame.
    pub fn locations(&mut self, piece: &[u8]) -> io::Result<()> {
        self.header(TYPE_LOCATIONS, piece.len())?;
        self.out.write_all(piece)
    }

    /// Flushes the writer underneath.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The writer underneath.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Reads frames, holding each to its type's size limit before anything is
/// allocated for it. Give it a buffered reader.
pub struct FrameReader<R: Read> {
    input: R,
    /// The last frame read was an `End`.
    at_end: bool,
}

impl<R: Read> FrameReader<R> {
    /// Frames read from `input`.
    pub fn new(input: R) -> Self {
        FrameReader {
            input,
            at_end: false,
        }
    }

    /// Whether the last frame read was an `End`: a body that ended there
    /// has nothing left to read (a server that failed after reading it
    /// waited for more, while its client waited for the answer).
    pub fn at_end(&self) -> bool {
        self.at_end
    }

    /// The next frame; `Ok(None)` at a clean end of stream (between frames).
    pub fn next_frame(&mut self) -> SyncResult<Option<Frame>> {
        let mut len = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match self.input.read(&mut len[got..]) {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => {
                    return Err(SyncError::Transport(TransportError::Disconnected(
                        "stream ended inside a frame".into(),
                    )))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(SyncError::connection_lost(e)),
            }
        }
        let len = u32::from_le_bytes(len) as usize;
        if len == 0 || len > MAX_FRAME {
            return Err(SyncError::Protocol(Violation::FrameLength { len }));
        }
        let ended = |e: io::Error| match SyncError::connection_lost(e) {
            SyncError::Transport(TransportError::Disconnected(how)) => SyncError::Transport(
                TransportError::Disconnected(format!("stream ended inside a frame: {how}")),
            ),
            stalled => stalled,
        };
        let mut frame_type = [0u8; 1];
        self.input.read_exact(&mut frame_type).map_err(ended)?;
        let (name, limit) = match frame_type[0] {
            TYPE_MESSAGE => ("message", MAX_FRAME),
            TYPE_OBJECT => ("object", MAX_OBJECT_FRAME),
            TYPE_CHUNK_STUB => ("chunk stub", 1 + 36),
            TYPE_END => ("end", 1),
            TYPE_LOCATIONS => ("locations", MAX_FRAME),
            other => {
                return Err(SyncError::Protocol(Violation::UnknownFrame {
                    frame_type: other,
                }))
            }
        };
        if len > limit {
            return Err(SyncError::Protocol(Violation::FrameTooLarge {
                frame: name,
                len,
                limit,
            }));
        }
        // The type byte and an object's header are read apart from the
        // payload, so the payload lands in its own Vec and is never moved
        // down over them (a clone of 1 GiB moved every byte once more).
        let body_len = len - 1;
        let frame = if frame_type[0] == TYPE_OBJECT {
            if body_len < OBJECT_HEADER_LEN {
                return Err(malformed("object"));
            }
            let mut head = [0u8; OBJECT_HEADER_LEN];
            self.input.read_exact(&mut head).map_err(ended)?;
            let payload =
                read_body(&mut self.input, body_len - OBJECT_HEADER_LEN).map_err(ended)?;
            parse_object(&head, payload)?
        } else {
            parse_frame(
                frame_type[0],
                read_body(&mut self.input, body_len).map_err(ended)?,
            )?
        };
        self.at_end = matches!(frame, Frame::End);
        Ok(Some(frame))
    }

    /// The next frame, which must exist.
    pub fn expect_frame(&mut self) -> SyncResult<Frame> {
        self.next_frame()?.ok_or_else(|| {
            SyncError::Transport(TransportError::Disconnected(
                "the other side closed the connection".into(),
            ))
        })
    }
}

/// `len` bytes of a frame's body, read [`READ_STEP`] at a time so a length
/// a peer declares but does not send never sizes a buffer.
fn read_body(input: &mut impl Read, len: usize) -> io::Result<Vec<u8>> {
    let mut body = Vec::with_capacity(len.min(READ_STEP));
    while body.len() < len {
        let at = body.len();
        body.resize(at + (len - at).min(READ_STEP), 0);
        input.read_exact(&mut body[at..])?;
    }
    Ok(body)
}

fn malformed(frame: &'static str) -> SyncError {
    SyncError::Protocol(Violation::MalformedFrame { frame })
}

/// An object frame from its header (kind, compression, raw length, id) and
/// its payload.
fn parse_object(head: &[u8; OBJECT_HEADER_LEN], payload: Vec<u8>) -> SyncResult<Frame> {
    let kind = ObjectKind::from_u8(head[0]).ok_or_else(|| malformed("object"))?;
    let compression = head[1];
    let raw_len = u32::from_le_bytes([head[2], head[3], head[4], head[5]]);
    let id = ObjectId::from_slice(&head[6..38]).ok_or_else(|| malformed("object"))?;
    check_declared_len("object", &id, raw_len)?;
    Ok(Frame::Object(StoredObject {
        id,
        kind,
        compression,
        raw_len,
        payload,
    }))
}

/// Any frame but an object's, from its type and its body.
fn parse_frame(frame_type: u8, body: Vec<u8>) -> SyncResult<Frame> {
    match frame_type {
        TYPE_MESSAGE => Ok(Frame::Message(body)),
        TYPE_CHUNK_STUB => {
            if body.len() != 36 {
                return Err(malformed("chunk stub"));
            }
            let id = ObjectId::from_slice(&body[..32]).ok_or_else(|| malformed("chunk stub"))?;
            let raw_len = u32::from_le_bytes(
                body[32..36]
                    .try_into()
                    .map_err(|_| malformed("chunk stub"))?,
            );
            check_declared_len("chunk", &id, raw_len)?;
            Ok(Frame::ChunkStub { id, raw_len })
        }
        TYPE_END if body.is_empty() => Ok(Frame::End),
        TYPE_LOCATIONS => Ok(Frame::Locations(body)),
        other => Err(SyncError::Protocol(Violation::UnknownFrame {
            frame_type: other,
        })),
    }
}

/// Decodes a message frame's body as `T` (a [`Request`](crate::protocol::Request)
/// or [`Response`](crate::protocol::Response)).
pub fn decode_message<T: DeserializeOwned>(bytes: &[u8]) -> SyncResult<T> {
    postcard::from_bytes(bytes).map_err(|e| SyncError::Protocol(Violation::MalformedMessage(e)))
}

/// An object or chunk frame's declared length, held to the store's rule.
fn check_declared_len(what: &'static str, id: &ObjectId, len: u32) -> SyncResult<()> {
    if check_object_len(what, len.into()).is_err() {
        return Err(SyncError::Protocol(Violation::DeclaredTooLarge {
            what,
            id: *id,
            len: len.into(),
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(write: impl FnOnce(&mut FrameWriter<&mut Vec<u8>>)) -> Vec<Frame> {
        let mut buf = Vec::new();
        write(&mut FrameWriter::new(&mut buf));
        let mut r = FrameReader::new(&buf[..]);
        let mut out = Vec::new();
        while let Some(f) = r.next_frame().unwrap() {
            out.push(f);
        }
        out
    }

    #[test]
    fn frames_round_trip() {
        let obj = StoredObject {
            id: ObjectId([7; 32]),
            kind: ObjectKind::Tree,
            compression: 1,
            raw_len: 99,
            payload: vec![1, 2, 3],
        };
        let frames = round_trip(|w| {
            w.message(&("hello", 5u32)).unwrap();
            w.object(&obj).unwrap();
            w.chunk_stub(&ObjectId([9; 32]), 12345).unwrap();
            w.locations(b"a piece").unwrap();
            w.end().unwrap();
        });
        assert_eq!(frames.len(), 5);
        let Frame::Message(m) = &frames[0] else {
            panic!("not a message")
        };
        assert_eq!(
            decode_message::<(String, u32)>(m).unwrap(),
            ("hello".to_string(), 5)
        );
        assert_eq!(frames[1], Frame::Object(obj));
        assert_eq!(
            frames[2],
            Frame::ChunkStub {
                id: ObjectId([9; 32]),
                raw_len: 12345
            }
        );
        assert_eq!(frames[3], Frame::Locations(b"a piece".to_vec()));
        assert_eq!(frames[4], Frame::End);
    }

    #[test]
    fn truncated_stream_is_an_error_not_an_end() {
        let mut buf = Vec::new();
        FrameWriter::new(&mut buf)
            .chunk_stub(&ObjectId([1; 32]), 5)
            .unwrap();
        for cut in 1..buf.len() {
            let mut r = FrameReader::new(&buf[..cut]);
            assert!(r.next_frame().is_err(), "cut at {cut}");
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut r = FrameReader::new(&bytes[..]);
            for _ in 0..8 {
                match r.next_frame() {
                    Ok(Some(Frame::Message(m))) => { let _ = decode_message::<crate::protocol::Request>(&m); let _ = decode_message::<crate::protocol::Response>(&m); }
                    Ok(Some(_)) => {}
                    _ => break,
                }
            }
        }

        #[test]
        fn object_frames_round_trip(payload in proptest::collection::vec(any::<u8>(), 0..300), kind in 1u8..=4, comp in any::<u8>(), raw_len in 0..=MAX_OBJECT_SIZE as u32, id in any::<[u8; 32]>()) {
            let obj = StoredObject { id: ObjectId(id), kind: ObjectKind::from_u8(kind).unwrap(), compression: comp, raw_len, payload };
            let frames = round_trip(|w| w.object(&obj).unwrap());
            prop_assert_eq!(frames, vec![Frame::Object(obj)]);
        }

        /// Whatever length and type a frame header declares, a short stream
        /// is an error, never a panic or a buffer of the declared size.
        #[test]
        fn declared_lengths_never_size_a_buffer(len in any::<u32>(), frame_type in any::<u8>(), body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut bytes = len.to_le_bytes().to_vec();
            bytes.push(frame_type);
            bytes.extend_from_slice(&body);
            let mut r = FrameReader::new(&bytes[..]);
            if (len as usize) > 1 + body.len() {
                prop_assert!(r.next_frame().is_err());
            } else {
                let _ = r.next_frame();
            }
        }

        #[test]
        fn object_frames_declaring_more_than_the_largest_object_are_refused(raw_len in (MAX_OBJECT_SIZE as u32 + 1)..=u32::MAX) {
            let obj = StoredObject { id: ObjectId([3; 32]), kind: ObjectKind::Chunk, compression: 1, raw_len, payload: vec![1, 2, 3] };
            let mut buf = Vec::new();
            FrameWriter::new(&mut buf).object(&obj).unwrap();
            let err = FrameReader::new(&buf[..]).next_frame().unwrap_err().to_string();
            prop_assert!(err.contains("larger than the largest object"), "{}", err);
        }
    }

    /// A 4 GiB frame, an object frame past the largest object, an object
    /// declaring 4 GiB of content and a message declaring 64 MiB that never
    /// comes: each a clear error.
    fn refuse_huge_frames() {
        let err = FrameReader::new(&[0xff, 0xff, 0xff, 0xff, TYPE_MESSAGE][..])
            .next_frame()
            .unwrap_err()
            .to_string();
        assert!(err.contains("bad frame length 4294967295"), "{err}");

        let mut frame = ((MAX_FRAME - 1) as u32).to_le_bytes().to_vec();
        frame.push(TYPE_OBJECT);
        let err = FrameReader::new(&frame[..])
            .next_frame()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("object frame of") && err.contains("larger than the largest one"),
            "{err}"
        );

        let obj = StoredObject {
            id: ObjectId([3; 32]),
            kind: ObjectKind::Chunk,
            compression: 1,
            raw_len: u32::MAX,
            payload: vec![0; 100],
        };
        let mut buf = Vec::new();
        FrameWriter::new(&mut buf).object(&obj).unwrap();
        let err = FrameReader::new(&buf[..])
            .next_frame()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("declares a length of 4294967295 bytes")
                && err.contains("larger than the largest object (32 MiB)"),
            "{err}"
        );

        let mut frame = ((MAX_FRAME) as u32).to_le_bytes().to_vec();
        frame.push(TYPE_MESSAGE);
        frame.extend_from_slice(b"only this");
        let err = FrameReader::new(&frame[..]).next_frame().unwrap_err();
        assert!(
            matches!(err, SyncError::Transport(TransportError::Disconnected(_))),
            "{err}"
        );

        let mut stub = Vec::new();
        FrameWriter::new(&mut stub)
            .chunk_stub(&ObjectId([4; 32]), u32::MAX)
            .unwrap();
        assert!(FrameReader::new(&stub[..]).next_frame().is_err());
    }

    #[test]
    fn huge_frames_are_refused() {
        refuse_huge_frames();
    }

    /// The same in a process that cannot allocate 64 MiB more: a buffer
    /// sized by a declared length would abort it.
    #[test]
    fn huge_frames_are_refused_before_allocating() {
        if !dmv_testkit::in_small_address_space(
            "protocol::frame::tests::huge_frames_are_refused_before_allocating",
            32 << 20,
        ) {
            return;
        }
        assert!(Vec::<u8>::new().try_reserve(MAX_FRAME).is_err());
        refuse_huge_frames();
    }
}
