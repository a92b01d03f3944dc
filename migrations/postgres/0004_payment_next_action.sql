-- 3-D Secure: where the provider sends the buyer back after authenticating (given at
-- checkout), and the page the provider asked the buyer to visit (`next_action`) while the
-- attempt waits in `paying` for the buyer and the provider's answer.
alter table payment_attempts add column return_url text;
alter table payment_attempts add column next_action_url text;
