-- lists whose unsubscribed and bounced people were read from the service before the first push into them, and what subsync learnt of the account (the form of the list parameter)
CREATE TABLE subsync_list_learned (
    list_id    BIGINT NOT NULL PRIMARY KEY,
    learned_at BIGINT NOT NULL,
    found      BIGINT NOT NULL
);
CREATE TABLE subsync_account_setting (
    name       TEXT   NOT NULL PRIMARY KEY,
    value      TEXT   NOT NULL,
    updated_at BIGINT NOT NULL
);
