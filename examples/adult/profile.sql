-- Privacy profile of the Adult extract: quasi-identifiers sex, age, race, marital-status;
-- sensitive attribute salary-class. One row of table-level figures, computed from the
-- equivalence classes (one scan of the data).
SELECT count(*)                                   AS classes,
       sum(k)                                     AS rows,
       min(k)                                     AS k,
       sum(CASE WHEN k = 1 THEN 1 ELSE 0 END)     AS sample_uniques,
       min(l)                                     AS l_distinct,
       round(min(el), 4)                          AS l_entropy,
       min(rl)                                    AS l_recursive_c2,
       round(max(t), 4)                           AS t_closeness,
       round(sum(ncp * k) / sum(k), 4)            AS ncp_age_education,
       round(sum(leak), 4)                        AS entropy_leakage,
       round(max(risk), 4)                        AS max_risk,
       round(count(*) * 1.0 / sum(k), 4)          AS average_risk
FROM (
    SELECT k_anonymity()                                 AS k,
           l_diversity("salary-class")                   AS l,
           entropy_l_diversity("salary-class")           AS el,
           recursive_cl_diversity("salary-class", 2)     AS rl,
           t_closeness("salary-class")                   AS t,
           ncp(age, education)                           AS ncp,
           entropy_leakage()                             AS leak,
           reidentification_risk()                       AS risk
    FROM adult
    GROUP BY sex, age, race, "marital-status"
) AS classes
