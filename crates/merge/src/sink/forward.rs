//! Sinks made of sinks: a pair feeds both, a `&mut` feeds what it
//! points to.

use otf2::{AttributeRef, AttributeValue, DefsMut, RegionRef};

use super::{InContext, Left, Message, Record, Sink, SinkError, Step, Work};
use crate::layout::Program;

impl<A: Sink, B: Sink> Sink for (A, B) {
    fn defs(&mut self) -> Option<DefsMut<'_>> {
        match self.0.defs() {
            Some(d) => Some(d),
            None => self.1.defs(),
        }
    }

    #[inline(always)]
    fn enter(
        &mut self,
        t: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        region: RegionRef,
        index: usize,
        work: Work,
    ) -> Result<(), SinkError> {
        self.0.enter(t, attributes, region, index, work)?;
        self.1.enter(t, attributes, region, index, work)
    }

    #[inline(always)]
    fn leave(
        &mut self,
        t: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        region: RegionRef,
        index: usize,
        duration: u64,
    ) -> Result<(), SinkError> {
        self.0.leave(t, attributes, region, index, duration)?;
        self.1.leave(t, attributes, region, index, duration)
    }

    #[inline(always)]
    fn enter_in(
        &mut self,
        t: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        region: RegionRef,
        index: usize,
        work: Work,
        cx: InContext,
    ) -> Step {
        self.0.enter_in(t, attributes, region, index, work, cx)?;
        self.1.enter_in(t, attributes, region, index, work, cx)
    }

    #[inline(always)]
    fn leave_in(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], r: Left, cx: InContext) -> Step {
        self.0.leave_in(t, attributes, r, cx)?;
        self.1.leave_in(t, attributes, r, cx)
    }

    #[inline(always)]
    fn launched_from(&mut self, cx: InContext) {
        self.0.launched_from(cx);
        self.1.launched_from(cx);
    }

    #[inline(always)]
    fn send(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], m: &Message) -> Result<(), SinkError> {
        self.0.send(t, attributes, m)?;
        self.1.send(t, attributes, m)
    }

    #[inline(always)]
    fn recv(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], m: &Message) -> Result<(), SinkError> {
        self.0.recv(t, attributes, m)?;
        self.1.recv(t, attributes, m)
    }

    #[inline(always)]
    fn record(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], r: &Record) -> Result<(), SinkError> {
        self.0.record(t, attributes, r)?;
        self.1.record(t, attributes, r)
    }

    fn program(
        &mut self,
        t: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        begin: Option<&Program>,
    ) -> Result<(), SinkError> {
        self.0.program(t, attributes, begin)?;
        self.1.program(t, attributes, begin)
    }
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn defs(&mut self) -> Option<DefsMut<'_>> {
        (**self).defs()
    }

    #[inline(always)]
    fn enter(
        &mut self,
        t: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        region: RegionRef,
        index: usize,
        work: Work,
    ) -> Result<(), SinkError> {
        (**self).enter(t, attributes, region, index, work)
    }

    #[inline(always)]
    fn leave(
        &mut self,
        t: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        region: RegionRef,
        index: usize,
        duration: u64,
    ) -> Result<(), SinkError> {
        (**self).leave(t, attributes, region, index, duration)
    }

    #[inline(always)]
    fn enter_in(
        &mut self,
        t: u64,
        a: &[(AttributeRef, AttributeValue)],
        r: RegionRef,
        i: usize,
        w: Work,
        cx: InContext,
    ) -> Step {
        (**self).enter_in(t, a, r, i, w, cx)
    }

    #[inline(always)]
    fn leave_in(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], r: Left, cx: InContext) -> Step {
        (**self).leave_in(t, attributes, r, cx)
    }

    #[inline(always)]
    fn launched_from(&mut self, cx: InContext) {
        (**self).launched_from(cx)
    }

    #[inline(always)]
    fn send(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], m: &Message) -> Result<(), SinkError> {
        (**self).send(t, attributes, m)
    }

    #[inline(always)]
    fn recv(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], m: &Message) -> Result<(), SinkError> {
        (**self).recv(t, attributes, m)
    }

    #[inline(always)]
    fn record(&mut self, t: u64, attributes: &[(AttributeRef, AttributeValue)], r: &Record) -> Result<(), SinkError> {
        (**self).record(t, attributes, r)
    }

    fn program(
        &mut self,
        t: u64,
        attributes: &[(AttributeRef, AttributeValue)],
        begin: Option<&Program>,
    ) -> Result<(), SinkError> {
        (**self).program(t, attributes, begin)
    }
}
