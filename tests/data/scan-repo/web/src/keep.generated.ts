unleash.isEnabled('kept-generated');
