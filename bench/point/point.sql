\set id random(1, 1000000)
SELECT id, name, department, salary FROM point_emp WHERE id = :id;
