//! The tables of tickets (`LOCK.WAIT`) without Redis: who receives each queued ticket and
//! how, who may cancel it, and each receiver's mailbox of ended waits and parked
//! `LOCK.GRANTS`. Pure bookkeeping, unit-tested alone (the module's `waits/tickets.rs`
//! holds the node's one copy and does the talking to Redis). Every operation costs O(1) or
//! O(log n), whatever the number of tickets and mails: a mail is found by its wait id, a
//! parked call by its handle, never by a search.

use std::collections::{BTreeMap, HashSet};
use std::mem::size_of;
use std::rc::Rc;

use crate::idhash::{IdMap, IdSet};
use crate::registry::Grant;
use crate::reply::Outcome;

/// How a ticket's outcome travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Push,
    Pull,
}

/// Who may cancel a wait besides its receiver: the connection that queued it, and any
/// connection of the ACL user it ran as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rights {
    pub sender: u64,
    pub user: Option<Rc<[u8]>>,
}

/// A connection that asks to cancel a wait.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    pub id: u64,
    pub user: Option<&'a [u8]>,
}

/// Whether `caller` may cancel a wait of these rights received by `receiver`: `None`, no;
/// `Some(tell)`, yes, and `tell` says whether the receiver is to hear of it (the caller is
/// neither the sender nor the receiver, only a connection of the same user).
pub fn may_cancel(rights: &Rights, receiver: u64, caller: &Caller<'_>) -> Option<bool> {
    if caller.id == rights.sender || caller.id == receiver {
        return Some(false);
    }
    let same_user = matches!((&rights.user, caller.user), (Some(a), Some(b)) if **a == *b);
    same_user.then_some(true)
}

/// A queued ticket.
#[derive(Debug, Clone)]
pub struct Ticket {
    pub receiver: u64,
    pub delivery: Delivery,
    pub rights: Rights,
}

/// An ended wait waiting in a mailbox; a grant keeps what revoking it needs.
#[derive(Debug, Clone)]
pub struct Mail {
    pub wait: u64,
    pub outcome: Outcome,
    pub grant: Option<Grant>,
    pub rights: Rights,
}

/// A `LOCK.GRANTS` blocked on an empty mailbox: its handle, its parking number, and the
/// timer of its `BLOCK` limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parked {
    pub bc: usize,
    pub parking: u64,
    pub timer: Option<u64>,
}

#[derive(Default)]
struct Receiver {
    tickets: IdSet<u64>,
    /// Push: its subscription to its channel was checked.
    subscribed: bool,
    /// By their number of arrival.
    mailbox: BTreeMap<u64, Mail>,
    parked: Option<Parked>,
}

impl Receiver {
    fn idle(&self) -> bool {
        self.tickets.is_empty() && self.mailbox.is_empty() && self.parked.is_none()
    }
}

/// What a receiver whose connection closed leaves behind.
#[derive(Debug, Default)]
pub struct Left {
    /// Its queued tickets, to be taken out of their queues.
    pub tickets: Vec<u64>,
    /// The grants of its mailbox, to be revoked.
    pub grants: Vec<Grant>,
    /// The timer of its parked `LOCK.GRANTS`, to be stopped.
    pub timer: Option<u64>,
}

/// Every ticket, receiver and mail of one node.
#[derive(Default)]
pub struct Receivers {
    tickets: IdMap<u64, Ticket>,
    receivers: IdMap<u64, Receiver>,
    /// Where each unread mail is: (receiver, number in its mailbox), by wait id.
    mailed: IdMap<u64, (u64, u64)>,
    /// Whose mailbox each parked `LOCK.GRANTS` waits on, by handle.
    parked: IdMap<usize, u64>,
    /// The ACL user names of tickets, each kept once.
    users: HashSet<Rc<[u8]>>,
    next_mail: u64,
    next_id: u64,
}

impl Receivers {
    /// A fresh number: unique for the node's life.
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The user name `name`, shared by every ticket of that user.
    pub fn user(&mut self, name: &[u8]) -> Rc<[u8]> {
        if let Some(kept) = self.users.get(name) {
            return Rc::clone(kept);
        }
        let kept: Rc<[u8]> = Rc::from(name);
        self.users.insert(Rc::clone(&kept));
        kept
    }

    /// Records the queued ticket `id`.
    pub fn add(&mut self, id: u64, ticket: Ticket) {
        let receiver = self.receivers.entry(ticket.receiver).or_default();
        receiver.tickets.insert(id);
        self.tickets.insert(id, ticket);
    }

    /// Whether `receiver`'s subscription was checked already; `mark` records that it was.
    pub fn subscribed(&mut self, receiver: u64, mark: bool) -> bool {
        let entry = self.receivers.entry(receiver).or_default();
        entry.subscribed |= mark;
        entry.subscribed
    }

    /// Whether `receiver` was last known subscribed to its channel (no push to it has
    /// reached nobody since its subscription was checked).
    pub fn is_subscribed(&self, receiver: u64) -> bool {
        self.receivers.get(&receiver).is_some_and(|r| r.subscribed)
    }

    /// A push to `receiver` reached nobody: its subscription is to be checked again.
    pub fn unsubscribed(&mut self, receiver: u64) {
        if let Some(r) = self.receivers.get_mut(&receiver) {
            r.subscribed = false;
        }
    }

    /// The queued ticket `id`.
    pub fn ticket(&self, id: u64) -> Option<&Ticket> {
        self.tickets.get(&id)
    }

    /// The ticket `id` left its queue: forgets it.
    pub fn forget(&mut self, id: u64) -> Option<Ticket> {
        let ticket = self.tickets.remove(&id)?;
        if self.tickets.is_empty() {
            // Give the memory of a burst of tickets back once they are all gone.
            self.tickets = IdMap::default();
        }
        if let Some(r) = self.receivers.get_mut(&ticket.receiver) {
            r.tickets.remove(&id);
        }
        Some(ticket)
    }

    /// Puts `mail` in `receiver`'s mailbox; the `LOCK.GRANTS` parked there, if any, to be
    /// woken (it is parked no more).
    pub fn post(&mut self, receiver: u64, mail: Mail) -> Option<Parked> {
        let number = self.next_mail;
        self.next_mail += 1;
        self.mailed.insert(mail.wait, (receiver, number));
        let r = self.receivers.entry(receiver).or_default();
        r.mailbox.insert(number, mail);
        let parked = r.parked.take()?;
        self.parked.remove(&parked.bc);
        Some(parked)
    }

    /// Takes up to `count` mails of `receiver`, oldest first.
    pub fn take_mail(&mut self, receiver: u64, count: usize) -> Vec<Mail> {
        let Some(r) = self.receivers.get_mut(&receiver) else {
            return Vec::new();
        };
        let mut mails = Vec::with_capacity(count.min(r.mailbox.len()));
        while mails.len() < count {
            let Some((_, mail)) = r.mailbox.pop_first() else {
                break;
            };
            self.mailed.remove(&mail.wait);
            mails.push(mail);
        }
        if r.idle() && !r.subscribed {
            self.receivers.remove(&receiver);
        }
        if self.mailed.is_empty() {
            self.mailed = IdMap::default();
        }
        mails
    }

    /// Parks a `LOCK.GRANTS` of `receiver` on its empty mailbox.
    pub fn park(&mut self, receiver: u64, parked: Parked) {
        self.parked.insert(parked.bc, receiver);
        self.receivers.entry(receiver).or_default().parked = Some(parked);
    }

    /// Unparks the `LOCK.GRANTS` parked as `parking` if it still is (its `BLOCK` ran out).
    pub fn unpark(&mut self, receiver: u64, parking: u64) -> Option<Parked> {
        let r = self.receivers.get_mut(&receiver)?;
        let parked = r.parked.filter(|p| p.parking == parking)?;
        r.parked = None;
        self.parked.remove(&parked.bc);
        Some(parked)
    }

    /// Forgets the handle `bc` wherever it is parked.
    pub fn forget_parked(&mut self, bc: usize) -> Option<Parked> {
        let receiver = self.parked.remove(&bc)?;
        let r = self.receivers.get_mut(&receiver)?;
        r.parked.take_if(|p| p.bc == bc)
    }

    /// The unread mail of the wait `id`, and its receiver.
    pub fn mail_mut(&mut self, id: u64) -> Option<(u64, &mut Mail)> {
        let (receiver, number) = *self.mailed.get(&id)?;
        let mail = self
            .receivers
            .get_mut(&receiver)?
            .mailbox
            .get_mut(&number)?;
        Some((receiver, mail))
    }

    /// Takes the unread mail of the wait `id` out of its mailbox.
    pub fn take_mailed(&mut self, id: u64) -> Option<Mail> {
        let (receiver, number) = self.mailed.remove(&id)?;
        self.receivers.get_mut(&receiver)?.mailbox.remove(&number)
    }

    /// The connection `receiver` closed: everything of it is forgotten.
    pub fn receiver_gone(&mut self, receiver: u64) -> Left {
        let Some(r) = self.receivers.remove(&receiver) else {
            return Left::default();
        };
        if r.tickets.len().saturating_mul(4) < self.tickets.len() {
            for id in &r.tickets {
                self.tickets.remove(id);
            }
        } else {
            // Most tickets are its own: one scan in the table's order is cheaper than a
            // lookup (a cache miss) per ticket.
            self.tickets.retain(|_, t| t.receiver != receiver);
        }
        let mut grants = Vec::new();
        for mail in r.mailbox.into_values() {
            self.mailed.remove(&mail.wait);
            grants.extend(mail.grant);
        }
        if let Some(parked) = r.parked {
            self.parked.remove(&parked.bc);
        }
        Left {
            tickets: r.tickets.into_iter().collect(),
            grants,
            timer: r.parked.and_then(|p| p.timer),
        }
    }

    /// Whether any connection receives tickets.
    pub fn any_receiver(&self) -> bool {
        !self.receivers.is_empty()
    }

    /// Outcomes in mailboxes, not read yet.
    pub fn unread(&self) -> usize {
        self.mailed.len()
    }

    /// Queued tickets.
    pub fn queued(&self) -> usize {
        self.tickets.len()
    }

    /// An estimate of the bytes of these tables: each hash table's buckets (a power of
    /// two, 8/7 of its capacity and more) with a control byte each, a B-tree's entries
    /// ×1.5 (its nodes are between half and wholly full).
    pub fn bytes(&self) -> usize {
        let buckets = |capacity: usize| match capacity {
            0 => 0,
            c => (c * 8 / 7).next_power_of_two(),
        };
        let own = |r: &Receiver| {
            buckets(r.tickets.capacity()) * (size_of::<u64>() + 1)
                + r.mailbox.len() * size_of::<(u64, Mail)>() * 3 / 2
        };
        buckets(self.tickets.capacity()) * (size_of::<(u64, Ticket)>() + 1)
            + buckets(self.receivers.capacity()) * (size_of::<(u64, Receiver)>() + 1)
            + buckets(self.mailed.capacity()) * (size_of::<(u64, (u64, u64))>() + 1)
            + self.receivers.values().map(own).sum::<usize>()
    }
}

#[cfg(test)]
#[path = "receivers_tests.rs"]
mod tests;
