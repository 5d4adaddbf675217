-- A small flux-accounting site (after schema_v38.sql): flux-accounting's own test tree
-- (t/scripts/create_test_db.py, the usage of t/t1006-update-fshare.t), two queues.
INSERT INTO bank_table (bank, parent_bank, shares) VALUES ('root', '', 1000), ('account1', 'root', 1000),
    ('account2', 'root', 100), ('account3', 'root', 10);
INSERT INTO association_table (creation_time, username, userid, bank, default_bank, shares, job_usage) VALUES
    (0, 'leaf.1.1', 5011, 'account1', 'account1', 10000, 100),
    (0, 'leaf.1.2', 5012, 'account1', 'account1', 1000, 11),
    (0, 'leaf.1.3', 5013, 'account1', 'account1', 100000, 10),
    (0, 'leaf.2.1', 5021, 'account2', 'account2', 100000, 8),
    (0, 'leaf.2.2', 5022, 'account2', 'account2', 10000, 3),
    (0, 'leaf.3.1', 5031, 'account3', 'account3', 100, 0),
    (0, 'leaf.3.2', 5032, 'account3', 'account3', 10, 1);
INSERT INTO queue_table (queue, priority) VALUES ('batch', 0), ('debug', 1);
