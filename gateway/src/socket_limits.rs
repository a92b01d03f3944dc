//! Who may hold a waiting-room socket: one live socket per queue ticket (a newer one replaces
//! the older, so a script opening hundreds with one token holds one), and a cap per client
//! address, so one machine cannot take the files a crowd of buyers needs.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// The sockets open on this instance, by ticket and by client address.
pub struct LiveSockets {
    per_address: usize,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    by_address: HashMap<IpAddr, usize>,
    by_ticket: HashMap<TicketKey, (u64, Arc<Notify>)>,
    next_generation: u64,
}

type TicketKey = (String, String);

impl LiveSockets {
    /// `per_address`: sockets (and upgrades in progress) one client address may have open.
    pub fn new(per_address: usize) -> Arc<Self> {
        Arc::new(Self {
            per_address: per_address.max(1),
            open: Mutex::new(Open::default()),
        })
    }

    fn open(&self) -> MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for one more socket from `address` (already keyed: an IPv6 /64 is one address),
    /// or `None` when it has its share. Held from before the upgrade until the socket closes,
    /// so upgrades in progress count too.
    pub fn reserve(self: &Arc<Self>, address: IpAddr) -> Option<AddressSlot> {
        let mut open = self.open();
        let count = open.by_address.entry(address).or_insert(0);
        if *count >= self.per_address {
            return None;
        }
        *count += 1;
        Some(AddressSlot {
            sockets: self.clone(),
            address,
        })
    }

    /// Makes this the one live socket of the ticket; the socket it replaces (if any) is told
    /// through its `Notify` and closes itself.
    pub fn take_ticket(self: &Arc<Self>, event: &str, ticket_id: &str) -> TicketSeat {
        let key = (event.to_owned(), ticket_id.to_owned());
        let replaced = Arc::new(Notify::new());
        let mut open = self.open();
        open.next_generation += 1;
        let generation = open.next_generation;
        if let Some((_, older)) = open
            .by_ticket
            .insert(key.clone(), (generation, replaced.clone()))
        {
            older.notify_one();
        }
        TicketSeat {
            sockets: self.clone(),
            key,
            generation,
            replaced,
        }
    }

    /// Sockets open from `address` (for tests and diagnostics).
    pub fn from_address(&self, address: IpAddr) -> usize {
        self.open().by_address.get(&address).copied().unwrap_or(0)
    }
}

/// One socket's share of its client address; given back on drop.
pub struct AddressSlot {
    sockets: Arc<LiveSockets>,
    address: IpAddr,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.sockets.open();
        if let Entry::Occupied(mut count) = open.by_address.entry(self.address) {
            *count.get_mut() -= 1;
            if *count.get() == 0 {
                count.remove();
            }
        }
    }
}

/// A socket's hold on its ticket; on drop the ticket is free again, unless a newer socket
/// has taken it meanwhile.
pub struct TicketSeat {
    sockets: Arc<LiveSockets>,
    key: TicketKey,
    generation: u64,
    replaced: Arc<Notify>,
}

impl TicketSeat {
    /// Completes when a newer socket of the same ticket has taken its place.
    pub async fn replaced(&self) {
        self.replaced.notified().await;
    }
}

impl Drop for TicketSeat {
    fn drop(&mut self) {
        let mut open = self.sockets.open();
        if let Entry::Occupied(entry) = open.by_ticket.entry(std::mem::take(&mut self.key))
            && entry.get().0 == self.generation
        {
            entry.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn an_address_holds_at_most_its_share_until_one_closes() {
        let sockets = LiveSockets::new(2);
        let address: IpAddr = [203, 0, 113, 9].into();
        let first = sockets.reserve(address).expect("first");
        let _second = sockets.reserve(address).expect("second");
        assert!(sockets.reserve(address).is_none());
        assert!(sockets.reserve([203, 0, 113, 10].into()).is_some());
        drop(first);
        assert!(sockets.reserve(address).is_some());
    }

    #[tokio::test]
    async fn a_newer_socket_replaces_the_older_and_keeps_the_ticket() {
        let sockets = LiveSockets::new(20);
        let older = sockets.take_ticket("ev", "t1");
        let newer = sockets.take_ticket("ev", "t1");
        tokio::time::timeout(Duration::from_secs(1), older.replaced())
            .await
            .expect("the older socket is told");
        // The older one closing does not free the ticket the newer one holds...
        drop(older);
        let newest = sockets.take_ticket("ev", "t1");
        tokio::time::timeout(Duration::from_secs(1), newer.replaced())
            .await
            .expect("...so the next one still replaces it");
        drop(newer);
        drop(newest);
        assert!(sockets.open().by_ticket.is_empty());
    }
}
