unleash.isEnabled('ignored-generated');
