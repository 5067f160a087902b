select id, age, sex, education, capital_loss
from {{ source('clinic', 'adult') }}
