"""The region stage: feature cells, integer scaling, plausibility, region membership,
margin constants and boundary witnesses."""
