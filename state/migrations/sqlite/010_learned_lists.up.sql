-- lists whose unsubscribed and bounced people were read from the service before the first push into them, and what subsync learnt of the account (the form of the list parameter)
CREATE TABLE subsync_list_learned (
    list_id    INTEGER NOT NULL PRIMARY KEY,
    learned_at INTEGER NOT NULL,
    found      INTEGER NOT NULL
);
CREATE TABLE subsync_account_setting (
    name       TEXT    NOT NULL PRIMARY KEY,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
);
