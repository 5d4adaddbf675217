-- flux-accounting's database schema, version 38 (v0.60's create_db.py), without rows:
-- the tables `fairflow import flux` reads, for tests and examples.
-- sqlite3 site.db < schema_v38.sql && sqlite3 site.db < site.sql
PRAGMA user_version = 38;
CREATE TABLE association_table (
    creation_time    bigint(20)                         NOT NULL,
    mod_time         bigint(20)  DEFAULT 0              NOT NULL,
    active           int(11)     DEFAULT 1              NOT NULL,
    username         tinytext                           NOT NULL,
    userid           int(11)     DEFAULT 65534          NOT NULL,
    bank             tinytext                           NOT NULL,
    default_bank     tinytext                           NOT NULL,
    shares           int(11)     DEFAULT 1              NOT NULL    ON CONFLICT REPLACE DEFAULT 1,
    job_usage        real        DEFAULT 0.0            NOT NULL,
    fairshare        real        DEFAULT 0.5            NOT NULL    ON CONFLICT REPLACE DEFAULT 0.5,
    max_running_jobs int(11)     DEFAULT 5              NOT NULL    ON CONFLICT REPLACE DEFAULT 5,
    max_active_jobs  int(11)     DEFAULT 7              NOT NULL    ON CONFLICT REPLACE DEFAULT 7,
    max_nodes        int(11)     DEFAULT 2147483647     NOT NULL    ON CONFLICT REPLACE DEFAULT 2147483647,
    max_cores        int(11)     DEFAULT 2147483647     NOT NULL    ON CONFLICT REPLACE DEFAULT 2147483647,
    queues           tinytext    DEFAULT ''             NOT NULL    ON CONFLICT REPLACE DEFAULT '',
    projects         tinytext    DEFAULT '*'            NOT NULL    ON CONFLICT REPLACE DEFAULT '*',
    default_project  tinytext    DEFAULT '*'            NOT NULL    ON CONFLICT REPLACE DEFAULT '*',
    max_sched_jobs   int(11)     DEFAULT 2147483647     NOT NULL    ON CONFLICT REPLACE DEFAULT 2147483647,
    PRIMARY KEY   (username, bank)
);
CREATE TABLE bank_table (
    bank_id           integer    PRIMARY KEY AUTOINCREMENT,
    bank              text                   NOT NULL,
    active            int(11)    DEFAULT 1   NOT NULL,
    parent_bank       text       DEFAULT '',
    shares            int                    NOT NULL,
    job_usage         real       DEFAULT 0.0 NOT NULL,
    priority          real       DEFAULT 0.0 NOT NULL    ON CONFLICT REPLACE DEFAULT 0.0,
    ignore_older_than bigint(20) DEFAULT 0
);
CREATE TABLE job_usage_factor_table (
    username            tinytext                    NOT NULL,
    userid              int(11)                     NOT NULL,
    bank                tinytext                    NOT NULL,
    last_job_timestamp  real        DEFAULT 0.0,
    PRIMARY KEY (username, bank)
);
CREATE TABLE t_half_life_period_table (
    cluster               tinytext DEFAULT 'cluster',
    end_half_life_period  real     DEFAULT 0.0
);
CREATE TABLE queue_table (
    queue               tinytext                      NOT NULL,
    min_nodes_per_job         int(11)    DEFAULT 1          NOT NULL ON CONFLICT REPLACE DEFAULT 1,
    max_nodes_per_job         int(11)    DEFAULT 1          NOT NULL ON CONFLICT REPLACE DEFAULT 1,
    max_time_per_job          int(11)    DEFAULT 60         NOT NULL ON CONFLICT REPLACE DEFAULT 60,
    priority                  int(11)    DEFAULT 0          NOT NULL ON CONFLICT REPLACE DEFAULT 0,
    max_running_jobs          int(11)    DEFAULT 100        NOT NULL ON CONFLICT REPLACE DEFAULT 100,
    max_nodes_per_assoc       int(11)    DEFAULT 2147483647 NOT NULL ON CONFLICT REPLACE DEFAULT 2147483647,
    max_sched_jobs            int(11)    DEFAULT 2147483647 NOT NULL ON CONFLICT REPLACE DEFAULT 2147483647,
    max_sched_nodes_per_assoc int(11)    DEFAULT 2147483647 NOT NULL ON CONFLICT REPLACE DEFAULT 2147483647,
    max_sched_cores_per_assoc int(11)    DEFAULT 2147483647 NOT NULL ON CONFLICT REPLACE DEFAULT 2147483647,
    max_nodes                 int(11)    DEFAULT 2147483647 NOT NULL ON CONFLICT REPLACE DEFAULT 2147483647,
    max_cores                 int(11)    DEFAULT 2147483647 NOT NULL ON CONFLICT REPLACE DEFAULT 2147483647,
    PRIMARY KEY (queue)
);
CREATE TABLE project_table (
    project_id          integer    PRIMARY KEY AUTOINCREMENT,
    project             tinytext               NOT NULL,
    usage               real       DEFAULT 0.0 NOT NULL
);
INSERT INTO project_table (project) VALUES ('*');
CREATE TABLE priority_factor_weight_table (
    factor      text     PRIMARY KEY NOT NULL,
    weight      integer              NOT NULL
);
INSERT INTO priority_factor_weight_table VALUES ('fairshare', 100000), ('queue', 10000), ('bank', 0), ('urgency', 1000);
CREATE TABLE config_table (
    key     TEXT PRIMARY KEY NOT NULL,
    value   TEXT             NOT NULL
);
INSERT INTO config_table VALUES ('priority_usage_reset_period', '2419200'), ('priority_decay_half_life', '604800'),
    ('decay_factor', '0.5'), ('node_weight', '1.0'), ('core_weight', '0.0'), ('gpu_weight', '0.0'),
    ('deny_unknown_queues', 'false');
CREATE TABLE job_usage_per_association_table (
    username tinytext              NOT NULL,
    userid   int(11)               NOT NULL,
    bank     tinytext              NOT NULL,
    period   int(11)               NOT NULL,
    value    real     DEFAULT 0.0,
    PRIMARY KEY (username, bank, period)
);
