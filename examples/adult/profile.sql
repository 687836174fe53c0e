-- Privacy profile of the Adult extract, one row of table-level figures.
-- Quasi-identifiers: sex, age in 10-year bands, race, marital-status; sensitive attribute:
-- salary-class. The inner query has one row per equivalence class; the whole-table
-- functions (t_closeness, ncp, entropy_leakage) still read the data once.
SELECT count(*)                                   AS classes,
       sum(k)                                     AS rows,
       min(k)                                     AS k,
       sum(CASE WHEN k = 1 THEN 1 ELSE 0 END)     AS sample_uniques,
       min(l)                                     AS l_distinct,
       round(min(el), 4)                          AS l_entropy,
       min(rl)                                    AS l_recursive_c2,
       round(max(t), 4)                           AS t_closeness,
       -- information lost by the age bands, weighted by class size
       round(sum(ncp * k) / sum(k), 4)            AS ncp_age,
       round(sum(leak), 4)                        AS entropy_leakage,
       round(max(risk), 4)                        AS max_risk,
       round(count(*) * 1.0 / sum(k), 4)          AS average_risk
FROM (
    SELECT k_anonymity()                             AS k,
           l_diversity("salary-class")               AS l,
           entropy_l_diversity("salary-class")       AS el,
           recursive_cl_diversity("salary-class", 2) AS rl,
           t_closeness("salary-class")               AS t,
           ncp(age)                                  AS ncp,
           entropy_leakage()                         AS leak,
           reidentification_risk()                   AS risk
    FROM adult
    GROUP BY sex, age / 10, race, "marital-status"
) AS classes
