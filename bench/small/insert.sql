\set id random(1, 1000000000)
INSERT INTO small_ins VALUES (:id, 'x');
