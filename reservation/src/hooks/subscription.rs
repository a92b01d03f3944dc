//! Webhook subscriptions: made (bounded per event), listed, deleted. The secret is returned
//! once, by `create`; reads never carry it.

use crate::Error;
use crate::ids::{self, EventId, WebhookId, trusted};
use crate::store::Store;

use super::HookError;
use super::kind::{HookSecret, HookUrl, Kinds, WEBHOOKS_PER_EVENT};

/// A subscription as the organizer sees it.
#[derive(Debug, Clone)]
pub struct Subscription {
    pub webhook_id: WebhookId,
    pub event_id: EventId,
    pub url: String,
    pub kinds: Kinds,
    pub created_at_ms: i64,
}

#[derive(sqlx::FromRow)]
struct Row {
    webhook_id: String,
    event_id: String,
    url: String,
    kinds: i64,
    created_at_ms: i64,
}

impl TryFrom<Row> for Subscription {
    type Error = Error;
    fn try_from(r: Row) -> Result<Self, Error> {
        Ok(Subscription {
            webhook_id: trusted(r.webhook_id)?,
            event_id: trusted(r.event_id)?,
            url: r.url,
            kinds: Kinds::from_bits(r.kinds),
            created_at_ms: r.created_at_ms,
        })
    }
}

impl Store {
    /// Subscribes `url` to `kinds` of `event`. The event row is locked first, so two
    /// concurrent subscriptions cannot both take the last place.
    pub async fn create_webhook(
        &self,
        event: &EventId,
        url: &HookUrl,
        kinds: Kinds,
        secret: &HookSecret,
    ) -> Result<Subscription, HookError> {
        let id = ids::generate("wh");
        let mut tx = self.begin().await?;
        let found: Option<(String,)> =
            sqlx::query_as(self.sql("select event_id from events where event_id = $1 FOR_UPDATE"))
                .bind(event.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(Error::from)?;
        if found.is_none() {
            return Err(Error::EventNotFound.into());
        }
        let made = sqlx::query(
            "insert into webhook_subscriptions (webhook_id, event_id, url, secret, kinds) \
             select $1, $2, $3, $4, $5 \
             where (select count(*) from webhook_subscriptions where event_id = $2) < $6",
        )
        .bind(&id)
        .bind(event.as_str())
        .bind(url.as_str())
        .bind(secret.expose())
        .bind(kinds.bits())
        .bind(WEBHOOKS_PER_EVENT)
        .execute(&mut *tx)
        .await
        .map_err(Error::from)?;
        if made.rows_affected() != 1 {
            return Err(HookError::TooMany {
                max: WEBHOOKS_PER_EVENT,
            });
        }
        tx.commit().await.map_err(Error::from)?;
        let id: WebhookId = trusted(id)?;
        self.webhook(event, &id).await
    }

    /// The event's subscriptions, oldest first.
    pub async fn webhooks(&self, event: &EventId) -> Result<Vec<Subscription>, Error> {
        let rows = sqlx::query_as::<_, Row>(self.sql(concat!(
            "select webhook_id, event_id, url, cast(kinds as bigint) as kinds, \
             MS(created_at) as created_at_ms ",
            "from webhook_subscriptions where event_id = $1 order by created_at, webhook_id"
        )))
        .bind(event.as_str())
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(Subscription::try_from).collect()
    }

    /// One subscription of the event.
    pub async fn webhook(
        &self,
        event: &EventId,
        id: &WebhookId,
    ) -> Result<Subscription, HookError> {
        let row = sqlx::query_as::<_, Row>(self.sql(concat!(
            "select webhook_id, event_id, url, cast(kinds as bigint) as kinds, \
             MS(created_at) as created_at_ms ",
            "from webhook_subscriptions where event_id = $1 and webhook_id = $2"
        )))
        .bind(event.as_str())
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(Error::from)?;
        Ok(row.ok_or(HookError::NotFound)?.try_into()?)
    }

    /// Deletes the subscription; its deliveries and their attempts go with it (`on delete
    /// cascade`), pending or not.
    pub async fn delete_webhook(&self, event: &EventId, id: &WebhookId) -> Result<(), HookError> {
        let gone = sqlx::query(
            "delete from webhook_subscriptions where event_id = $1 and webhook_id = $2",
        )
        .bind(event.as_str())
        .bind(id.as_str())
        .execute(&self.pool)
        .await
        .map_err(Error::from)?;
        if gone.rows_affected() != 1 {
            return Err(HookError::NotFound);
        }
        Ok(())
    }
}
