//! What an annotation says: its style, message, payload and attributes.

use raw::RegionRole;

use crate::nccl::Binary;

/// How an annotation is shown, and the role of its region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Style {
    PushPop = 0,
    StartEnd = 1,
    Mark = 2,
}

impl Style {
    pub fn role(self) -> RegionRole {
        match self {
            Style::PushPop => RegionRole::Function,
            Style::StartEnd => RegionRole::Code,
            Style::Mark => RegionRole::Artificial,
        }
    }
}

/// An annotation's message.
#[derive(Clone, Copy, Debug)]
pub enum Message<'a> {
    None,
    /// UTF-8 (a C string, or a wide string converted), read lossily.
    Text(&'a [u8]),
    /// A handle from [`Annotations::register_string`].
    Registered(usize),
}

/// An annotation's payload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Payload {
    None,
    Unsigned(u64),
    Signed(i64),
    Float(f64),
}

/// What an annotation says besides where and when.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    pub message: Message<'a>,
    /// 0: none.
    pub category: u32,
    /// ARGB.
    pub color: Option<u32>,
    pub payload: Payload,
    /// A payload of the payload extension (schema id, bytes): NCCL's.
    pub binary: Binary<'a>,
}

impl<'a> Attributes<'a> {
    /// Only a message.
    pub fn message(message: Message<'a>) -> Self {
        Attributes { message, category: 0, color: None, payload: Payload::None, binary: None }
    }

    /// Only a text message.
    pub fn text(text: &'a str) -> Self {
        Self::message(Message::Text(text.as_bytes()))
    }
}
