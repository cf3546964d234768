-- docs/OPERATIONS.md section 2 documents every option the wrapper takes with
-- its level, its scope (foreign-table options: table or store) and its
-- default; this holds it to the option table (ctxstore.options()).  The
-- test prints only disagreements: no rows when the two agree.
CREATE EXTENSION ctxstore;
\set doc `cat "$PG_ABS_SRCDIR/docs/OPERATIONS.md"`
-- The option rows of the tables of sections 2.1 to 2.4, with the level
-- their section names.  A row's first cell names one option or several
-- (`a`, `b`); the foreign-table table has the columns option, default,
-- value, belongs to, in effect.
CREATE TEMP TABLE doc_rows AS
WITH lines AS (
  SELECT line, n FROM regexp_split_to_table(:'doc', E'\n') WITH ORDINALITY AS t(line, n)
), sections AS (
  SELECT n AS from_n,
         lead(n, 1, 1000000) OVER (ORDER BY n) AS to_n,
         CASE WHEN line ~ '^### 2\.1 ' THEN 'server'
              WHEN line ~ '^### 2\.2 ' THEN 'user mapping'
              WHEN line ~ '^### 2\.3 ' THEN 'foreign table'
              WHEN line ~ '^### 2\.4 ' THEN 'column' END AS level
  FROM lines WHERE line ~ '^#'
), cells AS (
  SELECT s.level, l.n, string_to_array(l.line, ' | ') AS c
  FROM lines l JOIN sections s ON l.n > s.from_n AND l.n < s.to_n
  WHERE s.level IS NOT NULL AND l.line ~ '^\| `'
)
SELECT level, m[1] AS name,
       CASE level WHEN 'foreign table' THEN c[4] END AS scope,
       CASE level WHEN 'foreign table'
            THEN nullif(substring(c[2] FROM '^`([^`]*)`'), '') END AS default_value
FROM cells, regexp_matches(c[1], '`([a-z_]+)`', 'g') AS m;
-- Every option of the code is in the docs, with its level, scope and
-- default; every documented option is in the code.  (Server options'
-- defaults are the backends', not the option table's: not compared.)
SELECT coalesce(o.name, d.name) AS option, o.level AS code_level,
       d.level AS doc_level, o.scope AS code_scope, d.scope AS doc_scope,
       o.default_value AS code_default, d.default_value AS doc_default
FROM ctxstore.options() o FULL JOIN doc_rows d USING (name)
WHERE o.level IS DISTINCT FROM d.level
   OR o.scope IS DISTINCT FROM d.scope
   OR (o.level = 'foreign table' AND
       o.default_value IS DISTINCT FROM d.default_value);
-- The test would pass on a doc it cannot read: make sure it read the tables.
SELECT level, count(*) FROM doc_rows GROUP BY level ORDER BY level;
DROP EXTENSION ctxstore;
